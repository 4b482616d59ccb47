// Imported first by QuickJS builds (see sync-promise.ts): makes promises
// settle within the synchronous `run` export.
import { installSyncPromise } from './sync-promise';

installSyncPromise();
