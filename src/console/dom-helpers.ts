// DOM helpers written into the console's and the portal's scripts (both are served as same-origin files
// under a strict Content-Security-Policy): every value goes in as text, and buttons get listeners, never
// inline handlers.

export const DOM_HELPERS_JS = `
  function el(tag, text, className) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }
  function button(label, onClick) {
    var node = el('button', label);
    node.type = 'button';
    node.addEventListener('click', onClick);
    return node;
  }
`;
