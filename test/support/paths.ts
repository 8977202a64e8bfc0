import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The suite runs compiled, from .build/ (scripts/test.mjs builds it; SUITE_BUILD names another folder of
// the checkout): this file is .build/test/support/paths.js.

/** The checkout: README, package.json, src/, dist/. */
export const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** The compiled tree this file is part of. */
export const BUILD_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * The node arguments that run the service's command line from the same build as the tests:
 * `[...SERVICE_COMMAND, 'serve']` starts a service.
 */
export const SERVICE_COMMAND = ['--enable-source-maps', join(BUILD_ROOT, 'src', 'main.js')];
