import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A disk that fills up while a test runs: a size-limited tmpfs (mounting one needs root), and a file that
// takes whatever room is left on it.

/**
 * A tmpfs of `mb` megabytes at a new directory, or why it cannot be mounted here. `unmount` removes it
 * (lazily, so that a file still open elsewhere does not keep it).
 */
export function mountSmallDisk(mb: number): { dir: string; unmount(): void } | { skip: string } {
  const dir = mkdtempSync(join(tmpdir(), 'herald-full-disk-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${mb}m,mode=0700`, 'tmpfs', dir], { stdio: 'pipe' });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const why = (error as { stderr?: Buffer }).stderr?.toString().trim() || (error as Error).message;
    return { skip: `cannot mount a size-limited tmpfs here (needs root): ${why}` };
  }
  return {
    dir,
    unmount() {
      execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Writes a file in `dir` until the filesystem refuses (ENOSPC); returns its path. */
export function fill(dir: string): string {
  const file = join(dir, 'filler');
  const fd = openSync(file, 'w');
  try {
    for (const size of [1 << 20, 1 << 12]) {
      const chunk = Buffer.alloc(size, 7);
      for (;;) {
        try {
          writeSync(fd, chunk);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw error;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}
