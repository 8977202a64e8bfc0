import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../../support/paths.js';

// Every installed package accepts the Node.js the README promises (package.json `engines`): `npm ci` on it
// warns of none. Where a dependency's newest release wants a newer Node, package.json `overrides` keeps an
// earlier one with the same API.
test('no package in package-lock.json declares a Node.js newer than package.json engines allows', () => {
  const require = createRequire(import.meta.url);
  const semver = require('semver') as typeof import('semver');
  const root = pathToFileURL(`${REPO_ROOT}/`);
  const promised = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).engines.node as string;
  const lowest = semver.minVersion(promised)!.version;
  assert.equal(lowest, '20.19.0');
  const lock = JSON.parse(readFileSync(new URL('package-lock.json', root), 'utf8'));
  const refusing = Object.entries(lock.packages as Record<string, { version?: string; engines?: { node?: string } }>)
    .filter(([, entry]) => entry.engines?.node && !semver.satisfies(lowest, entry.engines.node))
    .map(([path, entry]) => `${path}@${entry.version} wants node ${entry.engines!.node}`);
  assert.deepEqual(refusing, []);
});
