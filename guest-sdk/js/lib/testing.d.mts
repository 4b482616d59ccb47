/** What one fixture's run did (`airlock test --json`). */
export interface FixtureOutcome {
  name: string;
  passed: boolean;
  failures: string[];
  end: { end: string; [key: string]: unknown };
  runs: number;
  steps: string[];
  requests: { method: string; url: string; body: string }[];
}
/** Runs `airlock test --json COMPONENT FIXTURES...` (`airlock` from `$AIRLOCK_BIN` or the PATH). */
export declare function runFixtures(
  component: string,
  fixtures: string[],
  options?: { airlock?: string },
): Promise<FixtureOutcome[]>;
/** Registers a `node:test` test whose subtests are the fixtures. */
export declare function fixtureTests(component: string, fixtures: string[], options?: { airlock?: string }): void;
