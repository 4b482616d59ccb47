// Hostile: allocates without end. Must be stopped by the queue's memory cap
// (the run fails as `memory_limit`), never by the host running out.
import { handler } from '@airlock/sdk';

export default handler((): never => {
  const hoard: Uint8Array[] = [];
  while (true) {
    hoard.push(new Uint8Array(1 << 20).fill(1));
  }
});
