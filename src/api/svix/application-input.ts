import { Type } from 'typebox';
import { conflict, invalid } from '../errors.js';
import type { Scope, Store } from '../../store/index.js';
import { UidTakenError } from '../../store/applications.js';
import { ID_PREFIX } from '../../domain/ids.js';
import { Metadata, Uid } from './fields.js';

// An application as Svix's bodies give it, checked, and its creation: the application routes' create, and
// the `application` that message create and portal access create when the path names none.

export const ApplicationIn = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  uid: Type.Optional(Type.Union([Uid, Type.Null()])),
  metadata: Type.Optional(Metadata),
  rateLimit: Type.Optional(Type.Union([Type.Integer({ minimum: 1 }), Type.Null()])),
});
type In = { name?: string; uid?: string | null; metadata?: Record<string, string>; rateLimit?: number | null };

/** Refuses what Herald cannot keep as Svix would: a uid that reads as an id, an application rate limit. */
export function checked(body: In): In {
  if (body.uid?.startsWith(ID_PREFIX.application))
    throw invalid(`uid must not start with ${ID_PREFIX.application}: it would read as an application id`);
  if (body.rateLimit != null)
    throw invalid('rateLimit is not supported on applications; set rateLimit on each endpoint');
  return body;
}

/** Runs an application write and turns a uid taken already into 409 `conflict`. */
export async function uidChecked<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (error instanceof UidTakenError) throw conflict(error.message);
    throw error;
  }
}

/** Creates an application from Svix's ApplicationIn. */
export async function createApplication(store: Store, scope: Scope, body: In) {
  const { name, uid, metadata } = checked(body);
  return uidChecked(() =>
    store.applications.create(scope, { name: name!, uid: uid ?? undefined, metadata: metadata ?? {} }),
  );
}
