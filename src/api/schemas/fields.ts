import { Type } from 'typebox';
import { EVENT_TYPE_NAME } from '../../domain/catalog.js';

// Request fields that more than one surface takes (the native API, the Svix-compatible one, the portal):
// their rules are written here once, so the surfaces cannot drift apart. A surface that documents a field
// adds its description where it uses it (`described`, common.ts).

/** What a channel, a tag or a Svix event id may hold (Svix's rule, so both surfaces take the same ones). */
export const NAME_PATTERN = '^[a-zA-Z0-9\\-_.:]+$';

/** A channel or tag name. */
export const ChannelName = Type.String({ minLength: 1, maxLength: 128, pattern: NAME_PATTERN });
/** A message's channels (routing) and tags (labels). */
export const MessageChannels = Type.Array(ChannelName, { minItems: 1, maxItems: 5, uniqueItems: true });
export const MessageTags = Type.Array(ChannelName, { maxItems: 5, uniqueItems: true });

/** An event type as an emit or an endpoint names it; whether it is in the catalog is checked after. */
export const EventTypeName = Type.String({ minLength: 1, maxLength: 255 });

/** The event types an endpoint receives (empty: every event type). */
export const EventTypeNames = Type.Array(EventTypeName, { maxItems: 256, uniqueItems: true });

/** The name a catalog entry is created with: dotted, such as invoice.paid (src/domain/catalog.ts). */
export const CatalogName = Type.String({ minLength: 1, maxLength: 255, pattern: EVENT_TYPE_NAME.source });

/** An endpoint's URL; src/domain/urls.ts judges where it may point (endpointUrlProblem). */
export const EndpointUrl = Type.String({ minLength: 1, maxLength: 2048 });

/** An endpoint's or a catalog entry's description. */
export const Description = Type.String({ maxLength: 1024 });
