import { describe, expect, it } from 'vitest';
import { maskRobot, redact } from './redact.ts';

describe('maskRobot', () => {
  it('masks robot tokens', () => {
    expect(maskRobot('0123456789abcdef')).toBe('0123***cdef');
    expect(maskRobot('https://x.example/robot/send?access_token=0123456789abcdef')).toBe(
      'https://x.example/robot/send?access_token=0123***cdef',
    );
    expect(maskRobot('https://hooks.example/services/T000/B000/XXXXXXXXXXXX')).toBe(
      'https://hooks.example/serv***XXXX',
    );
  });
});

describe('redact', () => {
  it('masks robots at any depth, hides their secrets and cuts the query off webhook URLs', () => {
    // Arrange
    const config = {
      receiver: {
        channels: {
          email: [1],
          dinggroup: [{ webhook: '0123456789abcdef', secret: 'SECret' }, { webhook: 'tokentokentoken1' }],
          webhook: 'https://hook.example/in?token=abc',
        },
        dispatch: [{ receiver: { channels: { yachgroup: [{ webhook: 'abcdefghijklmnop', secret: '' }] } } }],
      },
      webhook: { url: 'https://hook.example/p?k=v' },
    };
    // Act
    const shown = redact(config);
    // Assert
    expect(shown).toEqual({
      receiver: {
        channels: {
          email: [1],
          dinggroup: [
            { webhook: '0123***cdef', secret: '(set)' },
            { webhook: 'toke***ken1', secret: '' },
          ],
          webhook: 'https://hook.example/in?…',
        },
        dispatch: [{ receiver: { channels: { yachgroup: [{ webhook: 'abcd***mnop', secret: '' }] } } }],
      },
      webhook: { url: 'https://hook.example/p?…' },
    });
    expect(JSON.stringify(shown)).not.toContain('SECret');
  });
});
