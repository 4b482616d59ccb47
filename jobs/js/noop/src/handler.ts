// The smallest possible handler: returns `{}` at once. Used by the
// benchmarks to measure what Airlock and the JS engine cost per job.
import { handler } from '@airlock/sdk';

export default handler(() => ({}));
