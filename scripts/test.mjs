#!/usr/bin/env node
// `node scripts/test.mjs [PATH...]`: compiles the tests (scripts/build.mjs --tests, and dist/ for the tests
// that run `npm start` and the CLI), then runs each test file on the store its folder names, a long file
// as its own process and a folder's short files together in one (groupable, below), SUITE_JOBS (default 4)
// processes at a time, longest first, printing every line as it comes, marked with its store and file (or
// folder and group). The whole suite also checks the types (tsc --noEmit, and the SDK's build) and the
// lint beside the tests:
//
//   test/unit/       no store: run once
//   test/contract/   behaviour every store shares: run once per store in SUITE_STORES
//   test/sqlite/     the embedded store only        test/postgres/   PostgreSQL only
//   test/browser/    pages in headless Chromium, on the embedded store (the page is the same on either), but
//                    for those that show the stores' own queries (EVERY_STORE_PAGES), on each store
//   sdk/test/        the SDK against a service on the embedded store (it speaks the same HTTP to either)
//
// The store reaches the file as SUITE_STORE; test/support/service.ts reads it. SUITE_STORES (default
// `sqlite,postgres`) narrows the stores; on PostgreSQL the runner first migrates a template database
// whose copies the tests' services start on (SUITE_PG_TEMPLATE, createTestDatabase's `migrated`); PATHs
// (files or folders) narrow the files. SUITE_BUILD names the
// folder of the checkout the tests are compiled into (default .build), so two runs can share a checkout. Each file's duration is
// kept in .tmp/test-times.json to order the next run (a fresh checkout: scripts/test-times.json). A file still running after SUITE_FILE_TIMEOUT_S
// (default 600) is stopped and counts as failed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const BUILD = join(root, process.env.SUITE_BUILD || '.build');
const TIMES = join(root, '.tmp', 'test-times.json');
const CHROMIUM = '/usr/bin/chromium';

function find(dir) {
  if (!existsSync(dir)) return [];
  if (statSync(dir).isFile()) return dir.endsWith('.test.ts') ? [dir] : [];
  return readdirSync(dir).flatMap((name) => (name === 'support' ? [] : find(join(dir, name))));
}

const EVERY_STORE_PAGES = ['test/browser/console/console-pages.test.ts', 'test/browser/portal/portal.test.ts'];

/** The stores a test file runs on, from its folder. */
function storesOf(file, stores) {
  const [top, kind] = file.split('/');
  if (top === 'sdk') return stores.includes('sqlite') ? ['sqlite'] : [];
  switch (kind) {
    case 'unit':
      return ['none'];
    case 'contract':
      return stores;
    case 'browser':
      // The pages that show what the stores' own queries answer (the overview, the lists and the inspector,
      // the portal's statuses) run on every store; the rest look the same on either.
      if (EVERY_STORE_PAGES.includes(file)) return stores;
      return stores.includes('sqlite') ? ['sqlite'] : [];
    case 'sqlite':
      return stores.includes('sqlite') ? ['sqlite'] : [];
    case 'postgres':
      return stores.includes('postgres') ? ['postgres'] : [];
    default:
      throw new Error(`${file}: a test file belongs under test/unit, contract, sqlite, postgres or browser`);
  }
}

function build() {
  const result = spawnSync(process.execPath, [join(root, 'scripts/build.mjs'), '--all'], { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

/**
 * Each test drops its PostgreSQL database and stops its own PostgreSQL server in t.after, also when it
 * fails. A test process that is killed (timeout, Ctrl-C, OOM) cannot; this removes what such processes
 * left behind, before and after the run. Databases and servers of live processes (someone else's run on
 * this machine) are never touched: their names carry the pid of the process that made them.
 */
function sweepStale() {
  runInBuild(`
    const { sweepStaleDatabases } = await import(${JSON.stringify(SUPPORT)});
    const { sweepStaleClusters } = await import(${JSON.stringify(join(BUILD, 'test/support/pg-cluster.js'))});
    const dbs = await sweepStaleDatabases().catch((e) => (console.error('sweep: ' + e.message), []));
    const clusters = await sweepStaleClusters().catch((e) => (console.error('sweep: ' + e.message), []));
    if (dbs.length + clusters.length > 0) console.log('removed leftovers of killed test runs: ' + [...dbs, ...clusters].join(', '));
  `);
}

/** The compiled test support the runner's own steps import. */
const SUPPORT = join(BUILD, 'test/support/service.js');

/** Runs `code` (an ES module's text, importing from the compiled tree) in a process of its own; true when it succeeded. */
function runInBuild(code) {
  return spawnSync(process.execPath, ['--input-type=module', '-e', code], { stdio: 'inherit', cwd: root }).status === 0;
}

/**
 * CPU seconds of this process's reaped children so far (utime + stime of those waited for, from
 * /proc/self/stat). It grows only when a child is reaped, so its growth at a child's exit is that child's
 * CPU: what the file cost, with the processes it ran and waited for.
 */
function childrenCpu() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) / 100;
  } catch {
    return 0;
  }
}
let lastCpu = childrenCpu();

const readTimes = () => {
  try {
    return JSON.parse(readFileSync(TIMES, 'utf8'));
  } catch {
    return {};
  }
};

/**
 * The order of a checkout's first run (a fresh clone, CI): the durations in scripts/test-times.json, a copy
 * of a whole run's .tmp/test-times.json kept with the code, so that the longest files start first there too
 * (in name order, a two-minute file started two thirds of the way in and ran last). Refreshed by hand when
 * the longest files change; a file it does not list goes first.
 */
const orderTimes = () => {
  const own = readTimes();
  return Object.keys(own).length > 0 ? own : committedTimes();
};

/** The durations kept with the code (scripts/test-times.json): the first run's order, and what is grouped. */
function committedTimes() {
  try {
    return JSON.parse(readFileSync(join(root, 'scripts', 'test-times.json'), 'utf8'));
  } catch {
    return {};
  }
}

/** A test path as its label names it: without `test/` (and `unit/`), nor `.test.ts`. */
const shortName = (path) => path.replace(/^test\/(unit\/)?/, '').replace(/\.test\.ts$/, '');

/** A test file on one store, as a job: its process and its label. */
function testJob(file, store) {
  const name = shortName(file);
  return {
    key: `${store} ${file}`,
    file,
    label: `[${store === 'none' ? 'unit' : store} ${name}]`,
    command: [process.execPath, '--enable-source-maps', '--test-reporter=spec', compiled(file)],
    env: { SUITE_STORE: store === 'none' ? '' : store },
    // The SDK's tests load its built package: they wait for the check that builds it.
    after: file.startsWith('sdk/') ? 'check types' : null,
  };
}

/**
 * Small test files share a process: the files of one folder on one store whose time in
 * scripts/test-times.json (the committed copy, so a checkout groups the same way on every run) is under
 * ALONE_MS run in groups of up to GROUP_MS, each group one process that imports its files in name order.
 * A process's imports and its first, cold service start cost about a second of CPU that a warm process
 * does not pay again. A file runs alone when it is long (its
 * timing depends on the cores it shares), not yet timed, a browser page (one Chromium per file), measures
 * its own event loop (support/loop-probe: the garbage of the files before it would pause the loop it
 * times), or declares hooks outside any test (a group's process runs those around every file's tests, not
 * its own); SUITE_GROUPS=0 runs every file alone.
 */
const ALONE_MS = 12_000;
const GROUP_MS = 30_000;
const RUNS_ALONE = [/^(before|after|beforeEach|afterEach)\(/m, /from '[./]*\/support\/loop-probe\.js'/];

/** Whether `job` (a test file on one store) may share a process with its folder's other small files. */
function groupable(job, committed) {
  if (process.env.SUITE_GROUPS === '0' || job.file === null || job.after !== null) return false;
  if (job.file.startsWith('test/browser/')) return false;
  const ms = committed[job.key];
  if (ms === undefined || ms >= ALONE_MS) return false;
  const text = readFileSync(join(root, job.file), 'utf8');
  return !RUNS_ALONE.some((pattern) => pattern.test(text));
}

/**
 * The jobs with each folder's small files (per store) packed into group jobs: consecutive files in name
 * order until the group's committed time reaches GROUP_MS. A group of one is the file's own job.
 */
function grouped(jobs) {
  const committed = committedTimes();
  const alone = [];
  const byFolder = new Map();
  for (const job of jobs) {
    if (!groupable(job, committed)) {
      alone.push(job);
      continue;
    }
    const folder = `${job.env.SUITE_STORE || 'none'} ${job.file.slice(0, job.file.lastIndexOf('/'))}`;
    byFolder.set(folder, [...(byFolder.get(folder) ?? []), job]);
  }
  const groups = [];
  for (const members of byFolder.values()) {
    const before = groups.length;
    members.sort((a, b) => a.file.localeCompare(b.file));
    let current = [];
    let ms = 0;
    const close = () => {
      if (current.length > 0) groups.push({ members: current, index: groups.length - before + 1 });
      current = [];
      ms = 0;
    };
    for (const job of members) {
      current.push(job);
      ms += committed[job.key];
      if (ms >= GROUP_MS) close();
    }
    close();
  }
  return [
    ...alone,
    ...groups.map(({ members, index }) => (members.length === 1 ? members[0] : groupJob(members, index, committed))),
  ];
}

/**
 * One process running `members` (test files of one folder on one store) one after another, as the
 * folder's group `index`; it prints its files' names first.
 */
function groupJob(members, index, committed) {
  const [first] = members;
  const store = first.env.SUITE_STORE || 'none';
  const folder = first.file.slice(0, first.file.lastIndexOf('/'));
  const name = `${shortName(folder)}#${index}`;
  const entry = join(BUILD, '.groups', `${store}-${name.replace(/[/#]/g, '-')}.mjs`);
  const files = members.map((job) => job.file.slice(folder.length + 1));
  return {
    key: `${store} ${folder}#${index}`,
    file: folder,
    label: `[${store === 'none' ? 'unit' : store} ${name}]`,
    command: [process.execPath, '--enable-source-maps', '--test-reporter=spec', entry],
    // Written when the job starts: the build before the run empties the tree.
    write: () => {
      mkdirSync(dirname(entry), { recursive: true });
      writeFileSync(
        entry,
        [
          `console.log(${JSON.stringify(`files: ${files.join(', ')}`)});\n`,
          ...members.map((job) => `await import(${JSON.stringify(pathToFileURL(compiled(job.file)).href)});\n`),
        ].join(''),
      );
    },
    env: first.env,
    after: null,
    members: members.map((job) => job.key),
    committed: members.map((job) => committed[job.key]),
  };
}

/** The compiled form of test file `file` in the build tree. */
const compiled = (file) => join(BUILD, file.replace(/\.ts$/, '.js'));

/** A check of the whole tree beside the tests: the types (which also builds the SDK's dist/) and the lint. */
function checkJob(name, script) {
  return {
    key: `check ${name}`,
    file: null,
    label: `[check ${name}]`,
    command: ['sh', '-c', script],
    env: {},
    after: null,
  };
}

/**
 * The process groups of the jobs under way. Each job runs detached, in a group of its own (a timeout kills
 * the file with every process it started), so a Ctrl-C at the terminal reaches the runner alone: on SIGINT
 * or SIGTERM the runner kills every group under way before it exits, or they would run on, services and
 * workers included, retrying databases nobody drops. What the killed files leave behind (databases,
 * clusters, temp dirs) the next run's sweep removes.
 */
const running = new Set();
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    for (const pid of running) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {}
    }
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

/**
 * What a failed file said about its failure, in a few lines: the test reporter's closing "failing tests"
 * section without blank lines, frames of Node's own or of packages and an assertion's bookkeeping (its first
 * 12 lines), or where a file has no such section (it crashed or was stopped) its last 6 lines. The run's
 * closing summary repeats these beside the file's name, because a CI log is often read from its end.
 */
function failureLines() {
  const last = [];
  const failing = [];
  let inFailing = false;
  return {
    take(line) {
      last.push(line);
      if (last.length > 6) last.shift();
      if (/^✖ failing tests:/.test(line)) inFailing = true;
      else if (
        inFailing &&
        failing.length < 12 &&
        line.trim() &&
        !/^\s+(at (.*\()?(node:|.*node_modules)|generatedMessage:|code: 'ERR_|operator:)/.test(line)
      )
        failing.push(line);
    },
    digest: () => (failing.length > 0 ? failing : last.filter((line) => line.trim())),
  };
}

/** Runs one job; resolves with its counts. Every line it prints goes out as it comes. */
function runJob(job, log) {
  const { label } = job;
  const started = Date.now();
  job.write?.();
  return new Promise((resolveRun) => {
    const [command, ...args] = job.command;
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, ...job.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.add(child.pid);
    const counts = { pass: 0, fail: 0, skipped: 0, cancelled: 0 };
    const timeoutS = Number(process.env.SUITE_FILE_TIMEOUT_S ?? 600);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, timeoutS * 1000);
    const lines = (stream) => {
      let rest = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        const parts = (rest + chunk).split('\n');
        rest = parts.pop();
        for (const line of parts) take(line);
      });
      stream.on('end', () => rest && take(rest));
    };
    const seen = failureLines();
    const take = (line) => {
      const summary = /^ℹ (pass|fail|skipped|cancelled) (\d+)$/.exec(line);
      if (summary) counts[summary[1]] += Number(summary[2]);
      seen.take(line);
      log(`${label} ${line}`);
    };
    lines(child.stdout);
    lines(child.stderr);
    let cpu = 0;
    child.on('exit', () => {
      const now = childrenCpu();
      cpu = now - lastCpu;
      lastCpu = now;
    });
    child.on('close', (code) => {
      running.delete(child.pid);
      clearTimeout(timer);
      const ms = Date.now() - started;
      const failed = code !== 0 || counts.fail > 0 || counts.cancelled > 0;
      if (timedOut) log(`${label} stopped after ${timeoutS} s`);
      else if (code !== 0 && counts.fail === 0) log(`${label} exited with ${code}`);
      log(`${label} ${failed ? 'FAILED' : 'ok'} in ${(ms / 1000).toFixed(1)} s (${cpu.toFixed(1)} s of CPU)`);
      resolveRun({ ...job, label, ms, cpu, failed, counts, why: failed ? seen.digest() : [] });
    });
  });
}

const stores = (process.env.SUITE_STORES ?? 'sqlite,postgres').split(',').filter(Boolean);
const given = process.argv.slice(2).map((path) => relative(root, resolve(path)));
const files = (given.length > 0 ? given : ['test', 'sdk/test']).flatMap(find).sort();
const browserMissing = !existsSync(CHROMIUM);
const skippedFiles = [];
const times = orderTimes();
// The whole suite checks the tree too, beside the tests; a run of given files leaves that out.
const checks =
  given.length === 0
    ? [
        checkJob('types', 'npx tsc --noEmit && npx tsc -p sdk/tsconfig.json'),
        checkJob('lint', `${JSON.stringify(process.execPath)} scripts/lint.mjs`),
      ]
    : [];
/** A job's expected time: its last time, or a group's files' summed; a file never timed goes first. */
const expected = (job) =>
  job.members
    ? job.members.reduce((sum, key) => sum + (times[key] ?? 0), 0)
    : (times[job.key] ?? Number.MAX_SAFE_INTEGER);
const jobs = [
  ...checks,
  ...grouped(
    files
      .flatMap((file) => storesOf(file, stores).map((store) => testJob(file, store)))
      .filter((job) => {
        if (browserMissing && job.file.startsWith('test/browser/')) {
          skippedFiles.push(`${job.file} (no ${CHROMIUM}: apt-get install chromium)`);
          return false;
        }
        return true;
      }),
  )
    // Longest first, so the last jobs to finish are short ones.
    .sort((a, b) => expected(b) - expected(a)),
];

/**
 * Makes the run's migrated template database (createTemplateDatabase), named for this process, and hands
 * its name to every test as SUITE_PG_TEMPLATE; null when it could not (what it made is dropped, and each
 * test migrates its own).
 */
function makeTemplate() {
  const name = `herald_test_${process.pid}_template`;
  const made = runInBuild(`
    const { createTemplateDatabase } = await import(${JSON.stringify(SUPPORT)});
    await createTemplateDatabase(${JSON.stringify(name)});
  `);
  if (!made) {
    dropTemplate(name);
    return null;
  }
  process.env.SUITE_PG_TEMPLATE = name;
  return name;
}

function dropTemplate(name) {
  runInBuild(`
    const { adminQuery } = await import(${JSON.stringify(SUPPORT)});
    await adminQuery('drop database if exists ${name} with (force)');
  `);
}

const began = Date.now();
build();
const usesPostgres = jobs.some((job) => job.key.startsWith('postgres '));
if (usesPostgres) sweepStale();
const template = usesPostgres ? makeTemplate() : null;
const log = (line) => process.stdout.write(`${line}\n`);
for (const skipped of skippedFiles) log(`[skipped] ${skipped}`);
const results = [];
const queue = [...jobs];
const finished = new Set(jobs.every((job) => job.key !== 'check types') ? ['check types'] : []);
let onFinish = () => {};
const lanes = Math.max(1, Number(process.env.SUITE_JOBS ?? 4));
await Promise.all(
  Array.from({ length: Math.min(lanes, queue.length) }, async () => {
    while (queue.length > 0) {
      const next = queue.findIndex((job) => job.after === null || finished.has(job.after));
      if (next === -1) {
        // Every job left waits for one under way.
        await new Promise((resolveWait) => {
          const previous = onFinish;
          onFinish = () => {
            previous();
            resolveWait();
          };
        });
        continue;
      }
      const [job] = queue.splice(next, 1);
      const result = await runJob(job, log);
      results.push(result);
      finished.add(job.key);
      const wake = onFinish;
      onFinish = () => {};
      wake();
    }
  }),
);
if (template) dropTemplate(template);
if (usesPostgres) sweepStale();

mkdirSync(join(root, '.tmp'), { recursive: true });
const kept = readTimes();
for (const result of results) {
  if (!result.members) {
    kept[result.key] = result.ms;
    continue;
  }
  // A group's time is kept as its files' shares, in proportion to their committed times, so the copy can
  // refresh scripts/test-times.json and group the same files again.
  const whole = result.committed.reduce((sum, ms) => sum + ms, 0);
  result.members.forEach((key, i) => {
    kept[key] = Math.round((result.ms * result.committed[i]) / whole);
  });
}
writeFileSync(TIMES, `${JSON.stringify(kept, null, 1)}\n`);

const total = (name) => results.reduce((sum, result) => sum + result.counts[name], 0);
const failedFiles = results.filter((result) => result.failed);
log('');
const cpuTotal = results.reduce((sum, result) => sum + result.cpu, 0);
log(
  `${results.length} file runs in ${((Date.now() - began) / 1000).toFixed(0)} s on ${lanes} lanes ` +
    `(${cpuTotal.toFixed(0)} s of CPU in the test processes); slowest:`,
);
for (const result of [...results].sort((a, b) => b.ms - a.ms).slice(0, 8))
  log(`  ${(result.ms / 1000).toFixed(1).padStart(6)} s  ${result.cpu.toFixed(1).padStart(5)} s CPU  ${result.label}`);
for (const result of failedFiles) {
  log(`FAILED ${result.label}`);
  for (const line of result.why) log(`  ${line}`);
}
// A file that failed without a failing test (it crashed, or was stopped) counts as one failure.
const crashed = failedFiles.filter((result) => result.counts.fail + result.counts.cancelled === 0).length;
const failures = total('fail') + total('cancelled') + crashed;
log(`suite: ${total('pass')} passed, ${failures} failed, ${total('skipped')} skipped`);
process.exit(failedFiles.length > 0 ? 1 : 0);
