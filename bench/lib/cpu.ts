import { readFileSync } from 'node:fs';

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
