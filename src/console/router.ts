// The console's addresses (part of the console's script, src/console/script.ts): every view is a hash route,
// `#/<view>[/<id>][?filters]`, such as #/endpoints/ep_…, #/messages?app_id=…, #/deliveries?status=failed or
// #/catalog; the bare address opens the overview. The hash alone decides what is shown: links and the tabs
// change it, and each change (Back and Forward too) renders its view. The search box in the header opens
// the view of any id or application uid.

export const ROUTER_JS = `
  // A route: the view's name, the id in it if any, and its query parameters.
  function routeOf(hash) {
    var path = hash.replace(/^#\\/?/, '');
    var at = path.indexOf('?');
    var params = {};
    if (at >= 0) {
      new URLSearchParams(path.slice(at + 1)).forEach(function (value, name) { params[name] = value; });
      path = path.slice(0, at);
    }
    var parts = path.split('/').filter(Boolean).map(decodeURIComponent);
    return { view: parts[0] || 'overview', id: parts[1] || null, params: params };
  }
  function href(view, id, params) {
    return '#/' + view + (id ? '/' + encodeURIComponent(id) : '') + query(params || {});
  }
  // Opens an address: a new history entry, or the same view rendered again when it is already the address.
  function go(hash) {
    if (location.hash === hash) render().catch(fail);
    else location.hash = hash;
  }

  var views = {
    overview: function () { return loadOverview(); },
    applications: function (id) { return id ? openApplication(id) : loadApplications(); },
    endpoints: function (id, params) { return id ? openEndpoint(id, params.tab || 'overview') : loadEndpoints(); },
    messages: function (id, params) { return id ? openMessage(id) : loadMessages(params); },
    deliveries: function (id, params) { return id ? openDelivery(id) : loadDeliveries(params); },
    catalog: function () { return loadCatalog(); },
    operational: function () { return loadOperational(); },
    keys: function () { return loadKeys(); },
    audit: function (id, params) { return loadAudit(params); },
  };
  // The tab each view belongs to, and the section a view with an id shows.
  var sections = { applications: 'application', endpoints: 'endpoint', messages: 'message', deliveries: 'delivery' };

  function render() {
    var route = routeOf(location.hash);
    if (!views[route.view]) {
      show('There is no view at ' + location.hash + '.', true);
      return Promise.resolve();
    }
    notice.hidden = true;
    open(route.id && sections[route.view] ? sections[route.view] : route.view, route.view);
    window.scrollTo(0, 0);
    return views[route.view](route.id, route.params);
  }
  window.addEventListener('hashchange', function () { if (key()) render().catch(fail); });

  // Shows one section, and marks its tab.
  function open(section, tab) {
    Array.prototype.forEach.call(document.querySelectorAll('.view'), function (node) { node.hidden = node.id !== 'view-' + section; });
    Array.prototype.forEach.call(document.querySelectorAll('#tabs button'), function (button) {
      button.classList.toggle('current', button.dataset.view === (tab || section));
    });
  }
  Array.prototype.forEach.call(document.querySelectorAll('#tabs button'), function (tab) {
    tab.addEventListener('click', function () { go(href(tab.dataset.view)); });
  });

  // The search box: an id's prefix says what it names; anything else is an application's uid. What is
  // found opens; what is not is said beside the box.
  var searchForm = document.getElementById('search');
  var searchNote = document.getElementById('search-note');
  var kinds = [
    { prefix: 'evt_', path: 'messages/', view: 'messages' },
    { prefix: 'dlv_', path: 'deliveries/', view: 'deliveries' },
    { prefix: 'ep_', path: 'endpoints/', view: 'endpoints' },
  ];
  searchForm.addEventListener('submit', function (event) {
    event.preventDefault();
    var text = searchForm.q.value.trim();
    searchNote.hidden = true;
    if (!text) return;
    var kind = kinds.filter(function (k) { return text.indexOf(k.prefix) === 0; })[0] || { path: 'applications/', view: 'applications' };
    request('GET', kind.path + encodeURIComponent(text)).then(function (reply) {
      if (reply.status === 404) {
        searchNote.textContent = 'Nothing here has the id or uid "' + text + '".';
        searchNote.hidden = false;
        return;
      }
      if (reply.status >= 400) throw refused(reply);
      searchForm.q.value = '';
      go(href(kind.view, reply.data.id));
    }).catch(function (error) {
      searchNote.textContent = error.message;
      searchNote.hidden = false;
    });
  });
`;
