import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Certificates made for a test with the openssl command: a CA, and certificates it issues for a server
// (127.0.0.1 and localhost) or a client. EC P-256 keys unless a key is given, unencrypted PEM.

export interface Issued {
  cert: string;
  key: string;
}

export interface Ca extends Issued {
  /**
   * Issues a certificate valid for `days` days: for a server (127.0.0.1, localhost) or a client; for `key`
   * (a PEM private key) when given, else for a new P-256 key.
   */
  issue(commonName: string, use: 'server' | 'client', days?: number, key?: string): Issued;
}

function openssl(dir: string, args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

let serial = 1;

/** A new CA named `name`, its files in a temporary directory removed when the process ends. */
export function makeCa(name: string): Ca {
  const dir = mkdtempSync(join(tmpdir(), 'herald-ca-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.crt', '-subj', `/CN=${name}`, '-days', '3']);
  const read = (file: string) => readFileSync(join(dir, file), 'utf8');
  return {
    cert: read('ca.crt'),
    key: read('ca.key'),
    issue(commonName, use, days = 2, key) {
      const n = serial++;
      if (key !== undefined) writeFileSync(join(dir, `${n}.key`), key);
      const keyArgs = key === undefined ? [...ec, '-keyout', `${n}.key`] : ['-key', `${n}.key`];
      openssl(dir, ['req', '-new', ...keyArgs, '-out', `${n}.csr`, '-subj', `/CN=${commonName}`]);
      writeFileSync(
        join(dir, `${n}.ext`),
        use === 'server'
          ? 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'
          : 'extendedKeyUsage=clientAuth\n',
      );
      openssl(dir, [
        'x509',
        '-req',
        '-in',
        `${n}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-set_serial',
        String(1000 + n),
        '-out',
        `${n}.crt`,
        '-days',
        String(days),
        '-extfile',
        `${n}.ext`,
      ]);
      return { cert: read(`${n}.crt`), key: read(`${n}.key`) };
    },
  };
}
