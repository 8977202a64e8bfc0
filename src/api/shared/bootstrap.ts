import { apiKeyToApi } from '../serialize.js';
import type { Store } from '../../store/index.js';

/** A new organization with one Test and one Live key: what the dev bootstrap route and the CLI issue. */
export async function bootstrapOrganization(store: Store, name: string, plan: string) {
  const organization = await store.organizations.create(name, plan);
  const testKey = await store.organizations.issueKey({ orgId: organization.id, livemode: false }, 'bootstrap test key');
  const liveKey = await store.organizations.issueKey({ orgId: organization.id, livemode: true }, 'bootstrap live key');
  return {
    object: 'bootstrap' as const,
    organization: { id: organization.id, name: organization.name, plan: organization.plan },
    test_key: { ...apiKeyToApi(testKey.row), key: testKey.key },
    live_key: { ...apiKeyToApi(liveKey.row), key: liveKey.key },
  };
}
