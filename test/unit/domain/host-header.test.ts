import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isHostHeader } from '../../../src/domain/host-header.js';

// The Host a portal link may be built from: a host name or an address, with an optional port.

test('host names and addresses, with or without a port, are hosts', () => {
  for (const host of [
    'localhost',
    'localhost:8080',
    'hooks.example.com',
    'Hooks.Example.COM.',
    'a-b.c-d.example:443',
    '127.0.0.1',
    '127.0.0.1:65535',
    '[::1]',
    '[2001:db8::1]:8443',
    `${'a'.repeat(63)}.example`,
  ])
    assert.equal(isHostHeader(host), true, host);
});

test('anything else is not: markup, spaces, paths, credentials, bad ports, bad labels', () => {
  for (const host of [
    '',
    'evil.example"><script>',
    'evil.example/<script>',
    'evil example',
    'user@evil.example',
    'evil.example:0',
    'evil.example:65536',
    'evil.example:80:80',
    'evil.example:',
    'evil.example:http',
    '-evil.example',
    'evil-.example',
    'evil..example',
    'evil_example.com',
    `${'a'.repeat(64)}.example`,
    `${'a.'.repeat(127)}aa`,
    '[::1',
    '[not-an-address]',
    '::1',
    '127.0.0.1"',
    'évil.example',
  ])
    assert.equal(isHostHeader(host), false, host);
});
