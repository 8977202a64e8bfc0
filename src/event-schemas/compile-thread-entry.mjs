// Entry of the schema compile thread (compile-thread.ts): the thread starts without the process's
// loaders, so it registers tsx itself before loading the TypeScript that serves the requests.
import { register } from 'tsx/esm/api';

register();
await import('./compile-thread.ts');
