import type { TestContext } from 'node:test';
import type { Browser, Locator } from 'playwright-core';

// Headless Chromium for the tests that look at a page as a person would. They live under test/browser/,
// which the runner (scripts/test.mjs) runs on the embedded store only (the page is the same on either
// store) and skips, saying why, where /usr/bin/chromium is missing (.ci/run installs Debian's chromium).

const CHROMIUM = '/usr/bin/chromium';

/** Chromium, headless, closed when the test ends. */
export async function launchBrowser(t: TestContext): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  });
  t.after(() => browser.close());
  return browser;
}

/**
 * Chooses an action from a row's one actions menu (`details.menu`, src/console/dom-helpers.ts): opens the
 * menu, then clicks the item named `label`.
 */
export async function chooseAction(row: Locator, label: string): Promise<void> {
  const menu = row.locator('details.menu').first();
  if ((await menu.getAttribute('open')) === null) await menu.locator('summary').click();
  await menu.locator(`.menu-items :is(button, a):text-is("${label}")`).click();
}
