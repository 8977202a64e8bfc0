import type { TestContext } from 'node:test';
import { startTestService, type TestService } from '../../test/support/service.js';
import { Herald, type HeraldOptions } from '../src/index.js';

// The SDK's tests run it against the real service, started in this process on a random port (on the
// store the test runner names), with an organization made by the dev bootstrap route.

export interface World {
  service: TestService;
  herald: Herald;
  /** The organization's Live key, for what only Live shows. */
  liveKey: string;
  testKey: string;
}

/** A service and a Herald client with a fresh organization's Test key; both end with the test. */
export async function startWorld(
  t: TestContext,
  env: Record<string, string> = {},
  options: Partial<HeraldOptions> = {},
): Promise<World> {
  const service = await startTestService(env);
  t.after(() => service.stop());
  const keys = await Herald.devBootstrap({ baseUrl: service.url }, { name: 'SDK test' });
  const herald = new Herald({ baseUrl: service.url, apiKey: keys.test_key.key, ...options });
  return { service, herald, liveKey: keys.live_key.key, testKey: keys.test_key.key };
}

/** Every item a list gives, through all its pages. */
export async function all<T>(list: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of list) items.push(item);
  return items;
}
