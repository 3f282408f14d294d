// The version of mooring, read from its package.json (the same file in src/ and dist/ layouts).
import { readFileSync } from 'node:fs';
import { parseJson } from './json.ts';

interface PackageJson {
  name: string;
  version: string;
}

const pkg = parseJson(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as PackageJson;

export const VERSION: string = pkg.version;
