// Unit tests of the dashboard's formatting (`npm run check`, in `make
// lint`): src/format.ts bundled by esbuild, then imported.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const bundled = await build({
  entryPoints: [fileURLToPath(new URL('../src/format.ts', import.meta.url))],
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  write: false,
});
const { ago, axisTimes, clock, day, duration, fullTime, proseParts, zone } = await import(
  `data:text/javascript,${encodeURIComponent(bundled.outputFiles[0].text)}`
);

test('a duration never shows 60 of a smaller unit', () => {
  assert.equal(duration(3_599_600), '1 h');
  assert.equal(duration(3_599_400), '59 min 59 s');
  assert.equal(duration(86_399_000), '1 d');
  assert.equal(duration(2 * 86_400_000 + 23.6 * 3_600_000), '3 d');
  assert.equal(duration(59_960), '1 min');
  assert.equal(duration(9_996), '10.0 s');
});

test('a duration keeps its parts and its sign', () => {
  assert.equal(duration(0.5), '0.500 ms');
  assert.equal(duration(250), '250 ms');
  assert.equal(duration(1_500), '1.50 s');
  assert.equal(duration(125_000), '2 min 5 s');
  assert.equal(duration(3_600_000), '1 h');
  assert.equal(duration(5_400_000), '1 h 30 min');
  assert.equal(duration(90_000_000), '1 d 1 h');
  assert.equal(duration(-125_000), '-2 min 5 s');
  assert.equal(duration(null), '—');
});

test('a message’s backticks become code spans, an unpaired one stays', () => {
  assert.deepEqual(proseParts('handler `payments` is bound by `emails`.'), [
    { code: false, text: 'handler ' },
    { code: true, text: 'payments' },
    { code: false, text: ' is bound by ' },
    { code: true, text: 'emails' },
    { code: false, text: '.' },
  ]);
  assert.deepEqual(proseParts('no code here'), [{ code: false, text: 'no code here' }]);
  assert.deepEqual(proseParts('a `b` c `d'), [
    { code: false, text: 'a ' },
    { code: true, text: 'b' },
    { code: false, text: ' c `d' },
  ]);
  assert.deepEqual(proseParts('``'), [{ code: true, text: '' }]);
  assert.deepEqual(proseParts(''), []);
});

test('“ago” never shows 60 of a unit', () => {
  const now = 1_000_000_000_000;
  assert.equal(ago(now - 59_600, now), '1 min ago');
  assert.equal(ago(now - 59_400, now), '59 s ago');
  assert.equal(ago(now - 3_580_000, now), '1 h ago');
  assert.equal(ago(now - 3_560_000, now), '59 min ago');
  assert.equal(ago(now - 84_700_000, now), '1 d ago');
  assert.equal(ago(now - 84_500_000, now), '23 h ago');
  assert.equal(ago(now + 120_000, now), 'in 2 min');
});

// The tests run in the zone of the machine; these build their times in it.
const at = (y, mo, d, h, mi, s = 0) => new Date(y, mo - 1, d, h, mi, s).getTime();

test('one time format: the day and the time, the year only outside this one', () => {
  const now = at(2026, 12, 5, 12, 0);
  assert.equal(clock(at(2026, 12, 5, 9, 3, 7), now), '5 Dec 09:03:07');
  assert.equal(clock(at(2026, 1, 31, 23, 59, 59), now), '31 Jan 23:59:59');
  assert.equal(clock(at(2025, 12, 31, 0, 0, 0), now), '31 Dec 2025 00:00:00');
  assert.equal(clock(undefined), '—');
  assert.equal(day(at(2026, 7, 4, 1, 0), now), '4 Jul');
});

test('a full time has its year and its zone', () => {
  const t = at(2026, 3, 9, 14, 3, 9);
  assert.equal(fullTime(t), `2026-03-09 14:03:09 ${zone(t)}`);
  assert.match(zone(t), /^UTC([+−]\d{2}:\d{2})?$/);
  const offset = -new Date(t).getTimezoneOffset();
  if (offset === 0) assert.equal(zone(t), 'UTC');
});

test('a chart axis writes hours and minutes, with the day under the first tick and each new day', () => {
  const now = at(2026, 12, 5, 12, 0);
  const ticks = [at(2026, 12, 4, 23, 50), at(2026, 12, 4, 23, 55), at(2026, 12, 5, 0, 0), at(2026, 12, 5, 0, 5)];
  assert.deepEqual(axisTimes(ticks, now), ['23:50\n4 Dec', '23:55', '00:00\n5 Dec', '00:05']);
});
