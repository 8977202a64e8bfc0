// Preloaded into every child the bench starts (`node --import ./bench/lib/parent-watch.ts ...`): when the
// bench process goes away without cleaning up (killed, crashed), the child exits instead of lingering.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) process.exit(1);
}, 500).unref();
