import { readFileSync } from 'node:fs';
import type { Readable } from 'node:stream';
import { WebSocket } from 'undici';

// Looks inside a running Node.js process from outside, as an operator could: its command line and
// NODE_OPTIONS from /proc, and, through the inspector that SIGUSR1 opens (on the port its
// --inspect-port names), what the process itself reports.

export interface ProcessLook {
  argv: string[];
  nodeOptions: string;
  /** process.execArgv, as the process reports it. */
  execArgv: string[];
  /** Whether module customization hooks (module.register, --loader, --import of a loader) are in place. */
  hooks: boolean;
  sourceMaps: boolean;
}

/** Ways a TypeScript loader gets into a Node.js process. */
export const LOADER =
  /\btsx\b|ts-node|@swc|esbuild-register|--loader|--experimental-loader|--import|--require|(^|\s)-r\b/;

function evaluate(url: string, expression: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.onopen = () =>
      socket.send(JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression, returnByValue: true } }));
    socket.onmessage = (event) => {
      const reply = JSON.parse(String(event.data)) as { id?: number; result?: { result: { value: unknown } } };
      if (reply.id !== 1) return;
      socket.close();
      resolve(reply.result?.result.value);
    };
    socket.onerror = () => reject(new Error(`inspector at ${url} could not be reached`));
  });
}

/**
 * Looks at process `pid`, whose stderr is `stderr`. The process must have been started with
 * NODE_OPTIONS=--inspect-port=0 (a free port, printed on stderr once SIGUSR1 opens the inspector).
 */
export async function lookInside(pid: number, stderr: Readable): Promise<ProcessLook> {
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  const nodeOptions = environ.find((entry) => entry.startsWith('NODE_OPTIONS='))?.slice('NODE_OPTIONS='.length) ?? '';
  const url = new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`no inspector opened:\n${text}`)), 10_000);
    stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const found = /Debugger listening on (ws:\/\/\S+)/.exec(text);
      if (found) {
        clearTimeout(timer);
        resolve(found[1]!);
      }
    });
  });
  process.kill(pid, 'SIGUSR1');
  const value = (await evaluate(
    await url,
    `JSON.stringify({
      execArgv: process.execArgv,
      hooks: process.moduleLoadList.includes('NativeModule internal/modules/esm/hooks'),
      sourceMaps: process.sourceMapsEnabled,
    })`,
  )) as string;
  return { argv, nodeOptions, ...(JSON.parse(value) as Omit<ProcessLook, 'argv' | 'nodeOptions'>) };
}
