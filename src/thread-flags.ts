/**
 * The flags a worker thread of this process starts with: --enable-source-maps when the process has it (so a
 * thread's stack traces name src/ lines too) and, unless `profile` is false, the process's --cpu-prof flags
 * (and their values), so a CPU profile of the process (the benchmark's --profile) covers its threads too.
 * Every other flag stays with the process: a preloaded module (`--import`) meant for the process must not run
 * again in each thread.
 */
export function threadExecArgv({ profile = true }: { profile?: boolean } = {}): string[] {
  const flags: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--enable-source-maps') flags.push(argv[i]!);
    if (!profile || !argv[i]!.startsWith('--cpu-prof')) continue;
    flags.push(argv[i]!);
    if (argv[i] !== '--cpu-prof' && !argv[i]!.includes('=') && i + 1 < argv.length) flags.push(argv[++i]!);
  }
  return flags;
}
