/**
 * The flags a worker thread of this process starts with: only the process's --cpu-prof flags (and their
 * values), so a CPU profile of the process (the benchmark's --profile) covers its threads too. Every other
 * flag stays with the process: a thread's entry registers the loader it needs itself, and a preloaded
 * module (`--import`) meant for the process must not run again in each thread.
 */
export function threadExecArgv(): string[] {
  const flags: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    if (!argv[i]!.startsWith('--cpu-prof')) continue;
    flags.push(argv[i]!);
    if (argv[i] !== '--cpu-prof' && !argv[i]!.includes('=') && i + 1 < argv.length) flags.push(argv[++i]!);
  }
  return flags;
}
