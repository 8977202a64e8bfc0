import openapiTS, { astToString } from 'openapi-typescript';

// The SDK's types are generated from the OpenAPI document the service serves (GET /api/v1/openapi.json),
// so they say what the server accepts and answers. Used by scripts/generate.ts, which writes
// src/openapi.ts, and by test/openapi-drift.test.ts, which fails when that file no longer matches. The
// header's `@generated` marks the file as generated for tools that read it (reviews, linters, editors).

const HEADER = `// @generated from GET /api/v1/openapi.json by \`npm run generate -w herald-sdk\`; do not edit by hand.
// test/openapi-drift.test.ts fails when the served document and this file differ.

`;

/**
 * The text of src/openapi.ts for an OpenAPI document: Herald's own routes. The Svix-compatible routes
 * (tagged `svix: …`) are left out: Svix's own SDKs are their clients.
 */
export async function typesFromOpenapi(doc: object): Promise<string> {
  const { paths = {}, ...rest } = doc as { paths?: Record<string, Record<string, { tags?: string[] }>> };
  const native = Object.fromEntries(
    Object.entries(paths).filter(([, operations]) =>
      Object.values(operations).every((operation) => !operation.tags?.some((tag) => tag.startsWith('svix: '))),
    ),
  );
  const ast = await openapiTS({ ...rest, paths: native } as unknown as Parameters<typeof openapiTS>[0]);
  return HEADER + astToString(ast);
}
