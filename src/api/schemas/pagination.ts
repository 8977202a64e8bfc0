import { Type, type TSchema } from 'typebox';
import { ID_PREFIX, type IdKind } from '../../domain/ids.js';
import { Nullable } from './common.js';

// How a list is asked for (its page, its filters) and answered.

/** A list filter (`?app_id=…`): an empty one is refused rather than read as no filter. */
export const Filter = Type.Optional(Type.String({ minLength: 1, maxLength: 256 }));

/** A list's window of creation times: `since` included, `until` excluded. */
export const CreatedWithin = {
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Created at or after this time' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Created before this time' })),
};

/**
 * `limit` and `cursor` of a list of `kind`. A cursor is the last id of the previous page, so one that is
 * not such an id (garbage, another kind's id) is refused rather than answered with a wrong page.
 */
export const pageQuery = (kind: IdKind) => ({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 250, description: 'Items per page (default 50)' })),
  cursor: cursorOf(kind),
});

/** The cursor of a list of `kind`: the next_cursor of the previous page, an id of that kind. */
export const cursorOf = (kind: IdKind) =>
  Type.Optional(
    Type.String({
      pattern: `^${ID_PREFIX[kind]}[0-9a-z]{26}$`,
      description: `next_cursor of the previous page (an ${ID_PREFIX[kind]}… id)`,
    }),
  );

/** A list response: {object: "list", data, has_more, next_cursor}; its example lists the item's example. */
export const ListOf = <T extends TSchema>(item: T) => {
  const examples = (item as { examples?: unknown[] }).examples;
  return Type.Object(
    {
      object: Type.Literal('list'),
      data: Type.Array(item),
      has_more: Type.Boolean(),
      next_cursor: Nullable(Type.String()),
    },
    Array.isArray(examples)
      ? { examples: [{ object: 'list', data: [examples[0]], has_more: false, next_cursor: null }] }
      : {},
  );
};
