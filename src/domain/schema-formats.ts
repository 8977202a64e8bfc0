import { fullFormats } from 'ajv-formats/dist/formats.js';
import { charge } from './validation-budget.js';

// The `format` checks of event schemas: ajv-formats' full set (the formats JSON Schema names, checked as
// its authors wrote them), each charging the characters it reads to the payload's validation budget, so
// many formats tried on one long string cost what the budget allows and no more.

type FormatCheck = { type?: 'string' | 'number'; validate: (value: never) => boolean } | boolean;

const check = (definition: unknown): ((value: never) => boolean) => {
  if (definition instanceof RegExp) return (value: string) => definition.test(value);
  if (typeof definition === 'function') return definition as (value: never) => boolean;
  return check((definition as { validate: unknown }).validate);
};

/** The formats by name, in the shape ajv's `addFormat` and its standalone code take. */
export const formats: Record<string, FormatCheck> = Object.fromEntries(
  Object.entries(fullFormats).map(([name, definition]) => {
    // `password` and `binary` are annotations: every string is valid.
    if (typeof definition === 'boolean') return [name, definition];
    const test = check(definition);
    const type = (definition as { type?: 'string' | 'number' }).type;
    if (type === 'number') return [name, { type, validate: test }];
    return [
      name,
      {
        type: 'string',
        validate: (value: string) => {
          charge(value.length);
          return test(value as never);
        },
      },
    ];
  }),
);
