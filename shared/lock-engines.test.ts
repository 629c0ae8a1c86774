import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  lockText,
  oldestNpmNode,
  projectNode,
  projectRoot,
  satisfies,
  withoutFailingEngines,
} from '../scripts/lock-engines.ts';

/**
 * npm checks `engines` against the Node.js that runs npm, not the one the project runs on
 * (scripts/lock-engines.ts). These tests make the check that matters instead: every installed
 * package admits the pinned Node.js, and the lock file gives npm nothing to warn about on the oldest
 * Node.js package.json's devEngines lets run it.
 */
const pkg = JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8'));
const lockFile = readFileSync(join(projectRoot, 'package-lock.json'), 'utf8');
const lock = JSON.parse(lockFile);

describe('satisfies: npm engines ranges', () => {
  it.each([
    ['24.21.0', '>=24', true],
    ['20.19.0', '>=22', false],
    ['20.19.0', '>= 18.0.0', true],
    ['20.19.0', '^20.19.0 || ^22.13.0 || >=23.5.0', true],
    ['20.18.3', '^20.19.0 || ^22.13.0 || >=23.5.0', false],
    ['24.21.0', '^22.12.0 || ^24.0.0 || >=26.0.0', true],
    ['25.0.0', '^22.12.0 || ^24.0.0 || >=26.0.0', false],
    ['20.19.0', '18 || 20 || >=22', true],
    ['21.0.0', '20 || >=22', false],
    ['20.19.0', '>= 14.x', true],
    ['20.19.0', '^10 || ^12 || >=14', true],
    ['11.2.0', '^10 || ^12 || >=14', false],
    ['20.19.0', '*', true],
    ['20.19.0', '', true],
    ['20.19.0', '>=12 <20', false],
    ['19.9.9', '>=12 <20', true],
    ['20.19.0', '>20', false],
    ['21.0.0', '>20', true],
    ['20.19.0', '~20.18', false],
    ['20.18.7', '~20.18', true],
    ['20.19.0', '18.0.0 - 20.20.0', true],
  ])('%s satisfies %j: %s', (version, range, expected) => {
    expect(satisfies(version, range)).toBe(expected);
  });
});

describe('engines of the installed packages', () => {
  it('admit the Node.js the project runs on (the pinned node devDependency), the project itself included', () => {
    // Arrange: each installed package's own package.json (what npm would have checked)
    const node = projectNode(pkg);
    const refused: string[] = [];
    // Act
    for (const path of Object.keys(lock.packages)) {
      const file = join(projectRoot, path, 'package.json');
      if (!existsSync(file)) continue; // a platform package not installed on this machine
      const range = JSON.parse(readFileSync(file, 'utf8')).engines?.node;
      if (typeof range === 'string' && !satisfies(node, range)) refused.push(`${path || 'tocsin'}: ${range}`);
    }
    // Assert
    expect(refused).toEqual([]);
  });

  it('are in the lock file only where the oldest Node.js allowed to run npm admits them (`npm run lock:engines`)', () => {
    const oldest = oldestNpmNode(pkg);
    expect(oldest).toMatch(/^\d+\.\d+\.\d+$/);
    expect(lockText(withoutFailingEngines(lock, oldest))).toBe(lockFile);
  });

  it('drops a failing range and keeps the root entry and the other engines', () => {
    const sample = {
      packages: {
        '': { engines: { node: '>=24' } },
        'node_modules/a': { engines: { node: '>=22' } },
        'node_modules/b': { engines: { node: '>=22', npm: '>=9' } },
        'node_modules/c': { engines: { node: '>=18' } },
      },
    };
    expect(withoutFailingEngines(sample, '20.19.0').packages).toEqual({
      '': { engines: { node: '>=24' } },
      'node_modules/a': {},
      'node_modules/b': { engines: { npm: '>=9' } },
      'node_modules/c': { engines: { node: '>=18' } },
    });
  });
});
