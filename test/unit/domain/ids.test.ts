import { test } from 'node:test';
import assert from 'node:assert/strict';
import { idFloor, idFrom, idTime, newId, orderedId } from '../../../src/domain/ids.js';

test('ids carry their prefix, are 26 characters of Crockford base32, and strictly increase', () => {
  const ids = Array.from({ length: 5_000 }, () => newId('message'));
  for (const id of ids) assert.match(id, /^evt_[0-9a-hjkmnp-tv-z]{26}$/);
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} !< ${ids[i]}`);
  assert.equal(new Set(ids).size, ids.length);
});

test('each millisecond starts from fresh randomness (the random pool advances and refills)', () => {
  // 600 different milliseconds use more than the 4 KB pool (256 ids' worth), so it must refill.
  const randomParts = Array.from({ length: 600 }, (_, i) => orderedId(Date.now() + 10_000 + i).slice(10));
  assert.equal(new Set(randomParts).size, randomParts.length, 'two milliseconds got the same random part');
  // The digits are spread over the alphabet, not stuck (a pool of zeros would give only "0").
  assert.ok(new Set(randomParts.join('')).size > 20);
});

test('an id made from a seed is the same for the same inputs, ordered by its own time, and well formed', () => {
  const seed = `${newId('task')}|wrk_a`;
  const at = Date.now();
  const id = idFrom('attempt', at, seed);
  assert.match(id, /^atm_[0-9a-hjkmnp-tv-z]{26}$/);
  assert.equal(idFrom('attempt', at, seed), id, 'recording an outcome again gives the same attempt id');
  assert.notEqual(idFrom('attempt', at, seed.replace('wrk_a', 'wrk_b')), id, 'another worker, another id');
  assert.ok(
    idFrom('attempt', at - 1, seed) < id && id < newId('attempt', at + 1),
    'ordered by the attempt time, among other ids',
  );
  // The digest spreads over the alphabet (a stuck encoding would give few characters).
  const tails = Array.from({ length: 200 }, (_, i) => idFrom('attempt', at, `${seed}${i}`).slice(14)).join('');
  assert.ok(new Set(tails).size === 32);
});

test('idTime reads back the millisecond an id was made at; other text gives null', () => {
  for (const ms of [0, 1, 1_700_000_000_123, 2 ** 45])
    for (const kind of ['message', 'attempt'] as const) assert.equal(idTime(idFrom(kind, ms, 'seed')), ms);
  for (const text of ['', 'evt_', 'evt_01h2', 'nounderscore', 'evt_01H2UUUUUU0000000000000000'])
    assert.equal(idTime(text), null, text);
});

test('idFloor before 1970 is the first id there is, and past the last time the last; never undefined digits', () => {
  const first = idFloor('delivery', 0);
  assert.equal(idFloor('delivery', -1), first);
  assert.equal(idFloor('delivery', Date.parse('1900-01-01T00:00:00Z')), first);
  assert.ok(newId('delivery') >= first);
  assert.match(idFloor('delivery', Number.MAX_SAFE_INTEGER), /^dlv_[0-9a-z]{10}$/);
  assert.ok(idFloor('delivery', Number.MAX_SAFE_INTEGER) > newId('delivery'));
  assert.doesNotMatch(idFloor('delivery', -1e15), /undefined/);
});
