import { describe, expect, it } from 'vitest';
import { SpecLimitSettingError, specLimitsFromEnv } from './spec-limits-env.js';

describe('specLimitsFromEnv', () => {
  it('reads each limit from its variable and leaves the rest to the defaults', () => {
    expect(
      specLimitsFromEnv({ PVE_GITOPS_MAX_FILE_BYTES: '1048576', PVE_GITOPS_MAX_YAML_DEPTH: ' 16 ', PVE_GITOPS_MAX_FILES: '' }),
    ).toEqual({
      maxFileBytes: 1_048_576,
      maxDepth: 16,
    });
    expect(specLimitsFromEnv({})).toEqual({});
  });

  it.each(['0', '-1', '1.5', '1e6', 'lots', '99999999999999999999'])('refuses %s, naming the variable', (value) => {
    expect(() => specLimitsFromEnv({ PVE_GITOPS_MAX_TOTAL_BYTES: value })).toThrow(SpecLimitSettingError);
    expect(() => specLimitsFromEnv({ PVE_GITOPS_MAX_TOTAL_BYTES: value })).toThrow(
      /^PVE_GITOPS_MAX_TOTAL_BYTES must be a positive integer/,
    );
  });
});
