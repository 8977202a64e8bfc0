// The outbound body: {"type", "timestamp", "data"}. Built as text from the stored payload JSON so the
// payload is never re-parsed, and the bytes signed are the bytes sent.
export function outboundBody(eventType: string, createdAtMs: number, payloadJson: string): string {
  return `{"type":${JSON.stringify(eventType)},"timestamp":${JSON.stringify(new Date(createdAtMs).toISOString())},"data":${payloadJson}}`;
}

/** The outbound body as a value, as a content filter reads it (content-filter.ts). */
export function outboundEnvelope(eventType: string, createdAtMs: number, payloadJson: string): unknown {
  return JSON.parse(outboundBody(eventType, createdAtMs, payloadJson));
}

/**
 * Whether an endpoint with these channels receives a message with these (decisions, "Svix-compatible
 * surface"): an endpoint without channels receives every message; one with channels only messages that
 * share at least one, so a message without channels goes only to endpoints without.
 */
export function sharesChannel(
  endpointChannels: readonly string[] | null,
  messageChannels: readonly string[] | null,
): boolean {
  if (!endpointChannels || endpointChannels.length === 0) return true;
  return (messageChannels ?? []).some((channel) => endpointChannels.includes(channel));
}

/** Whether an endpoint with this subscription list receives an event type (empty list: every type). */
export function subscribes(eventTypes: string[], eventType: string): boolean {
  return eventTypes.length === 0 || eventTypes.includes(eventType);
}
