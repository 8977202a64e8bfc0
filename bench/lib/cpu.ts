import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on Linux builds for x86 and ARM). */
const TICKS_PER_SECOND = 100;

/**
 * User plus system CPU time a process has used so far, in milliseconds, every thread included (read from
 * /proc/<pid>/stat, in steps of 10 ms); NaN once the process is gone. The bench reads it for processes it
 * cannot instrument, such as Herald's workers.
 */
export function processCpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces; utime and stime are fields 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

/**
 * User plus system CPU time, in milliseconds, of every process on the machine whose command name is
 * `command` (`postgres`: the server and all its backends; `redis-server`): the store's side of a drain,
 * which the worker's own CPU leaves out. Processes that started or ended between two readings make the
 * difference of two readings a little off; a drain's backends live through it.
 */
export function commandCpuMs(command: string): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      if (name !== command) continue;
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
    } catch {
      // gone meanwhile
    }
  }
  return total;
}
