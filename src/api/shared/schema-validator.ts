import { HttpError, invalid } from '../errors.js';
import type { PayloadValidator } from '../../domain/event-schema.js';
import { CompilerBusy, type SchemaCompiler, SchemaRefused } from '../../event-schemas/compiler.js';

/**
 * The validator of a schema (JSON text), or the error the API answers: 400 naming why it cannot be an
 * event schema (`stored`: the entry's own, accepted under earlier rules), 503 when the compiler is busy.
 * Both catalogs (native and Svix's) check the schemas they are given with it, and emits the payloads.
 */
export async function schemaValidator(
  schemas: SchemaCompiler,
  schemaJson: string,
  stored?: string,
): Promise<PayloadValidator> {
  try {
    return await schemas.validator(schemaJson);
  } catch (error) {
    if (error instanceof SchemaRefused)
      throw invalid(
        stored === undefined
          ? error.message
          : `the schema of event type ${stored} can no longer be used (${error.message}); update the event type's schema`,
      );
    if (error instanceof CompilerBusy)
      throw new HttpError(503, 'service_unavailable', `Event schemas cannot be compiled now: ${error.message}`, {
        'retry-after': '1',
      });
    throw error;
  }
}
