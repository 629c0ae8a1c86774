import type { TestProject } from 'vitest/node';

/**
 * The least-privilege proof at the end of the integration suite: the AWS calls the stack's functions
 * made (recorded in `callLog`) against the roles of the synthesized production stack. Any call a
 * function's role would refuse fails the run; after a complete run (every test file, no name filter,
 * all passed) so does any grant no call used. The summary is printed either way.
 */
export async function proveLeastPrivilege(project: TestProject, callLog: string): Promise<void> {
  const { testFiles } = await project.globTestFiles();
  const modules = project.vitest.state.getTestModules().filter((m) => m.project.name === project.name);
  const ran = new Set(modules.map((m) => m.moduleId));
  const complete =
    !project.vitest.config.testNamePattern &&
    testFiles.every((f) => ran.has(f)) &&
    modules.every((m) => m.state() === 'passed');
  const { checkCallLog, formatReport } = await import('../../infra/privileges/run.ts');
  const report = checkCallLog(callLog, { unused: complete });
  const text = formatReport(report);
  if (report.ok) {
    console.log(text);
    return;
  }
  console.error(text);
  throw new Error(
    `least privilege: ${report.denied.length} call(s) denied, ${report.unused.length} grant(s) unused (see above)`,
  );
}
