import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import type { Browser } from 'playwright-core';
import { TEST_STORE } from './service.js';

// Headless Chromium for the tests that look at a page as a person would. .ci/run installs Debian's
// chromium; where it is missing (a bare `npm test` on a machine without it) those tests are skipped and
// say why. They run in the SQLite pass only: the page is the same on either store.

const CHROMIUM = '/usr/bin/chromium';

/** Why a browser test is skipped here, or false when it runs. */
export const browserSkip: string | false =
  TEST_STORE !== 'sqlite'
    ? 'browser check runs in the SQLite pass'
    : !existsSync(CHROMIUM)
      ? `no ${CHROMIUM} (apt-get install chromium)`
      : false;

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
