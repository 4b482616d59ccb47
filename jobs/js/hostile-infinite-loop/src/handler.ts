// Hostile: spins forever. Must be stopped by fuel (or the deadline when the
// queue runs without fuel).
import { handler } from '@airlock/sdk';

export default handler((): never => {
  let x = 0;
  while (true) {
    x = (x + 1) | 0;
  }
});
