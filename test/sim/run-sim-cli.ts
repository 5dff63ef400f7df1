// Runs `pve-gitops sim` from source (the bin needs a build): `node --import tsx test/sim/run-sim-cli.ts …`.
import { simCommand } from '../../src/commands/sim.js';

process.exitCode = await simCommand.run(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
  cwd: process.cwd(),
});
