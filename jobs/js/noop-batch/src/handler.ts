// The smallest batch handler: each job of the batch returns `{}`. Used by
// the benchmarks to measure what a batch costs per job (`noop`'s twin for
// a queue bound with `batch`).
import { batchHandler } from '@airlock/sdk';

export default batchHandler((jobs) => jobs.map(() => ({})));
