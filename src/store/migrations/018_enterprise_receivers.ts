import type { Kysely } from 'kysely';

export async function up(db: Kysely<any>): Promise<void> {
  // An endpoint's TLS settings (src/domain/pem.ts): its client certificate and the CA bundle its
  // receiver's certificate is checked against, as PEM text; the client key sealed with HERALD_SECRET_KEY;
  // the certificate's notAfter, read once when it is set. All null: none.
  await db.schema.alterTable('endpoints').addColumn('tls_client_cert', 'text').execute();
  await db.schema.alterTable('endpoints').addColumn('tls_client_key_sealed', 'text').execute();
  await db.schema.alterTable('endpoints').addColumn('tls_ca', 'text').execute();
  await db.schema.alterTable('endpoints').addColumn('tls_client_cert_not_after', 'bigint').execute();
  // An endpoint's OAuth2 client (src/domain/endpoint-auth.ts): its settings as JSON, its secret sealed
  // with HERALD_SECRET_KEY. Null: requests carry no token.
  await db.schema.alterTable('endpoints').addColumn('auth', 'text').execute();
  await db.schema.alterTable('endpoints').addColumn('auth_secret_sealed', 'text').execute();
}
