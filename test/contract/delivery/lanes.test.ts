import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertTopUpTransition, Lane, Lanes, type TopUpState } from '../../../src/delivery/lanes.js';
import { task } from '../../support/tasks.js';

// The lanes on their own: a lane per endpoint, its share and capacity, its top-up state (with every move
// asserted), its pause, and forgetting a lane that holds nothing. Capacity 2 and two waves (a share of 4) here.

/** Starts a waiting attempt of the lane, as dispatch does. */
function start(lane: Lane): void {
  lane.waiting.shift();
  lane.inFlight++;
}

test('top-up states move only along the allowed transitions', () => {
  const allowed: [TopUpState, TopUpState][] = [
    ['idle', 'maybe-more'],
    ['maybe-more', 'wants-top-up'],
    ['maybe-more', 'idle'],
    ['wants-top-up', 'topping-up'],
    ['wants-top-up', 'maybe-more'],
    ['wants-top-up', 'idle'],
    ['topping-up', 'maybe-more'],
    ['topping-up', 'idle'],
  ];
  const states: TopUpState[] = ['idle', 'maybe-more', 'wants-top-up', 'topping-up'];
  for (const from of states)
    for (const to of states) {
      const legal = allowed.some(([f, t]) => f === from && t === to);
      if (legal) assert.doesNotThrow(() => assertTopUpTransition(from, to), `${from} -> ${to}`);
      else assert.throws(() => assertTopUpTransition(from, to), /illegal top-up transition/, `${from} -> ${to}`);
    }
  // A lane asserts its own moves: an idle lane cannot start a top-up nobody asked for.
  const lane = new Lane('ep_1', 2, 2);
  assert.throws(() => lane.move('topping-up'), /idle -> topping-up/);
  assert.equal(lane.topUp, 'idle');
});

test('a lane keeps its share, is taken in the order it got work, and is bounded by its capacity', () => {
  const lanes = new Lanes(2, 2);
  lanes.enqueue(task('ep_b'));
  lanes.enqueue(task('ep_a'));
  lanes.enqueue(task('ep_b'));
  assert.deepEqual(
    [...lanes.ready].map((lane) => lane.endpointId),
    ['ep_b', 'ep_a'],
  );
  const b = lanes.get('ep_b')!;
  assert.equal(b.load, 2);
  assert.ok(lanes.hasRoom('ep_b') && lanes.hasRoom('ep_new'));
  lanes.enqueue(task('ep_b'));
  lanes.enqueue(task('ep_b'));
  assert.equal(lanes.hasRoom('ep_b'), false, 'four held: its share');
  start(b);
  start(b);
  assert.equal(b.canStart(), false, 'two in flight: its capacity');
  assert.equal(b.load, 4, 'in flight and waiting count against its share');
});

test('a lane at its share is left to top-ups, asks for one when down to one wave, and its answer decides', () => {
  const lanes = new Lanes(2, 2);
  for (let i = 0; i < 4; i++) lanes.enqueue(task('ep_1'));
  const lane = lanes.get('ep_1')!;
  lanes.reachedShare('ep_1');
  assert.equal(lane.topUp, 'maybe-more');
  assert.deepEqual(lanes.leftToTopUps(), ['ep_1'], 'general claims skip it');
  start(lane);
  start(lane);
  assert.equal(lanes.drained(lane), false, 'two waves held: not yet');
  lane.inFlight--;
  start(lane);
  lane.inFlight--;
  assert.equal(lane.load, 2);
  assert.equal(lanes.drained(lane), true, 'down to one wave');
  assert.equal(lane.topUp, 'wants-top-up');
  assert.deepEqual([...lanes.wantTopUp], [lane]);
  assert.equal(lanes.drained(lane), false, 'asked once');
  assert.deepEqual(lanes.leftToTopUps(), ['ep_1']);

  // The worker has room for one: the top-up asks for that one.
  assert.equal(lanes.startTopUp(lane, 1), 1);
  assert.equal(lane.topUp, 'topping-up');
  assert.equal(lanes.wantTopUp.size, 0);
  assert.deepEqual(
    lanes.leftToTopUps(),
    [],
    'not skipped while its top-up runs: a failed one leaves it to general claims',
  );
  lanes.toppedUp(lane, true);
  assert.equal(lane.topUp, 'maybe-more', 'came back full: more may be due');

  lane.move('wants-top-up');
  lanes.wantTopUp.add(lane);
  assert.equal(lanes.startTopUp(lane, 10), 2, 'its share less what it holds');
  lanes.toppedUp(lane, false);
  assert.equal(lane.topUp, 'idle', 'came back short: back to general claims');
});

test('a top-up with nothing to ask for leaves the lane marked', () => {
  const lanes = new Lanes(2, 2);
  for (let i = 0; i < 4; i++) lanes.enqueue(task('ep_1'));
  const lane = lanes.get('ep_1')!;
  lanes.reachedShare('ep_1');
  lane.move('wants-top-up');
  lanes.wantTopUp.add(lane);
  assert.equal(lanes.startTopUp(lane, 5), 0, 'it holds its share');
  assert.equal(lane.topUp, 'maybe-more');
  assert.equal(lanes.wantTopUp.size, 0);
});

test('a paused lane is skipped by claims, asks for no top-up, and goes back to general claims when the pause ends', () => {
  const lanes = new Lanes(2, 2);
  for (let i = 0; i < 4; i++) lanes.enqueue(task('ep_1'));
  const lane = lanes.get('ep_1')!;
  lanes.reachedShare('ep_1');
  start(lane);
  start(lane);
  lane.inFlight -= 2;
  assert.ok(lanes.drained(lane));
  lanes.pause(lane, performance.now() + 60_000);
  assert.equal(lane.topUp, 'idle', 'unmarked');
  assert.equal(lanes.wantTopUp.size, 0, 'its top-up is no longer asked for');
  assert.deepEqual(lanes.leftToTopUps(), ['ep_1'], 'skipped while paused');
  lanes.reachedShare('ep_1');
  assert.equal(lane.topUp, 'idle', 'a paused lane is not marked');

  // A top-up under way when the pause begins keeps its state: its answer decides.
  const other = new Lanes(2, 2);
  for (let i = 0; i < 4; i++) other.enqueue(task('ep_2'));
  const two = other.get('ep_2')!;
  other.reachedShare('ep_2');
  two.move('wants-top-up');
  other.wantTopUp.add(two);
  two.waiting.length = 0;
  assert.equal(other.startTopUp(two, 5), 4);
  other.pause(two, performance.now() + 60_000);
  assert.equal(two.topUp, 'topping-up');
  other.toppedUp(two, true);
  assert.equal(two.topUp, 'maybe-more');
  assert.deepEqual(other.leftToTopUps(), ['ep_2']);
  // The pause ends: the mark goes with it (nothing in flight would ask for its top-up), and the lane,
  // holding nothing, is forgotten.
  two.pausedUntil = performance.now() - 1;
  assert.deepEqual(other.leftToTopUps(), []);
  assert.equal(two.topUp, 'idle');
  assert.equal(other.get('ep_2'), undefined, 'forgotten');
});

test('a lane that holds nothing is forgotten; stopping gives back what waits and unmarks every lane', () => {
  const lanes = new Lanes(2, 2);
  lanes.enqueue(task('ep_1'));
  const lane = lanes.get('ep_1')!;
  start(lane);
  lanes.ready.delete(lane);
  lanes.forgetIfEmpty(lane);
  assert.equal(lanes.size, 1, 'kept while an attempt is in flight');
  lane.inFlight--;
  lanes.forgetIfEmpty(lane);
  assert.equal(lanes.size, 0, 'forgotten once it holds nothing');

  for (let i = 0; i < 4; i++) lanes.enqueue(task('ep_a'));
  lanes.enqueue(task('ep_b'));
  lanes.reachedShare('ep_a');
  const b = lanes.get('ep_b')!;
  start(b);
  lanes.enqueue(task('ep_b'));
  const paused = lanes.lane('ep_c');
  lanes.pause(paused, performance.now() + 60_000);
  const given = lanes.takeWaiting();
  assert.equal(given.length, 5);
  assert.equal(lanes.ready.size, 0);
  assert.equal(lanes.get('ep_a'), undefined, 'unmarked and empty: forgotten');
  assert.equal(lanes.get('ep_b'), b, 'an attempt still in flight');
  assert.equal(lanes.get('ep_c'), paused, 'pauses stay');
});
