// Entry of the queue thread (queue-thread.ts): the thread starts without the process's loaders, so it
// registers tsx itself before loading the TypeScript that serves the calls.
import { register } from 'tsx/esm/api';

register();
await import('./queue-thread-host.ts');
