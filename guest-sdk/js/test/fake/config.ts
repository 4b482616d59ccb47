// Aliased to `airlock:job/config@0.6.0` in the test bundles.
import { fail, fake, none } from './state';

export function get(key: string): string | undefined {
  return fake.config.get(key) ?? none();
}
export function keys(): string[] {
  return [...fake.config.keys()].sort();
}
export function secret(name: string): string {
  if (!fake.secrets.has(name)) fail('invalid', `no secret \`${name}\` is set for queue \`orders\``);
  return `airlock-secret:${name}`;
}
export function revealSecret(name: string): string {
  const s = fake.secrets.get(name);
  if (!s) fail('invalid', `no secret \`${name}\` is set for queue \`orders\``);
  if (!s.reveal) fail('invalid', `secret \`${name}\` is not set with reveal`);
  return s.value;
}
