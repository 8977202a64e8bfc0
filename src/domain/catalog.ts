// The catalog every environment of a new organization starts with. `invoice.paid` is the default event
// of send-test, so it must always be here with an example payload.
export interface CatalogEntry {
  name: string;
  description: string;
  example: Record<string, unknown>;
}

export const STARTER_CATALOG: CatalogEntry[] = [
  {
    name: 'invoice.paid',
    description: 'An invoice was paid in full.',
    example: {
      invoice_id: 'inv_1001',
      amount: 4200,
      currency: 'usd',
      customer_id: 'cus_42',
      paid_at: '2026-01-01T00:00:00Z',
    },
  },
  {
    name: 'invoice.created',
    description: 'A new invoice was issued.',
    example: { invoice_id: 'inv_1001', amount: 4200, currency: 'usd', customer_id: 'cus_42' },
  },
  {
    name: 'customer.created',
    description: 'A customer account was created.',
    example: { customer_id: 'cus_42', email: 'ada@example.com' },
  },
];

/** Event type names: dotted lowercase words such as `invoice.paid`. */
export const EVENT_TYPE_NAME = /^[a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*$/;
