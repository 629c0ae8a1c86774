import { describe, expect, it } from 'vitest';
import { addressKind, checkOutboundUrl, isBlockedAddress } from './url-guard.ts';

describe('addressKind: every special-purpose range is refused', () => {
  it.each([
    // IPv4
    ['0.0.0.0', 'this network'],
    ['0.1.2.3', 'this network'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'metadata'],
    ['169.254.0.1', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'IETF protocol assignment'],
    ['192.0.2.1', 'documentation'],
    ['192.168.1.10', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.254', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::7f00:1', 'IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-compatible'],
    ['::ffff:0:7f00:1', 'IPv4-translated'],
    ['::ffff:0:127.0.0.1', 'IPv4-translated'],
    ['::ffff:0:808:808', 'IPv4-translated'],
    ['64:ff9b::a00:1', 'NAT64'],
    ['64:ff9b::10.0.0.1', 'NAT64'],
    ['64:ff9b::808:808', 'NAT64'],
    ['64:ff9b:1::1', 'NAT64'],
    ['64:ff9b:1:ffff::1', 'NAT64'],
    ['100::1', 'discard'],
    ['100::ffff:ffff:ffff:ffff', 'discard'],
    ['2001::1', 'Teredo'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo'],
    ['2001:2::1', 'benchmarking'],
    ['2001:db8::1', 'documentation'],
    ['2001:db8:ffff::1', 'documentation'],
    ['2002::1', '6to4'],
    ['2002:7f00:1::1', '6to4'],
    ['2002:808:808::1', '6to4'],
    ['3fff::1', 'documentation'],
    ['3fff:fff:ffff::1', 'documentation'],
    ['fd00:ec2::254', 'metadata'],
    ['fc00::1', 'unique-local'],
    ['fdff:ffff::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['4000::1', 'reserved'],
    ['1::1', 'reserved'],
    ['5f00::1', 'reserved'],
    ['64:ff9c::1', 'reserved'], // outside 2000::/3, next to NAT64
    // IPv4-mapped: the IPv4 address it maps, in any notation
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['::FFFF:7F00:0001', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:192.168.0.1', 'private'],
    ['::ffff:c000:201', 'documentation'],
    ['::ffff:0.0.0.0', 'this network'],
    // brackets as a URL writes them
    ['[::1]', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    // not an address at all
    ['not-an-ip', 'not an IP address'],
    ['localhost', 'not an IP address'],
    ['', 'not an IP address'],
  ])('%s is %s', (ip, kind) => {
    // Act / Assert
    expect(addressKind(ip)).toBe(kind);
    expect(isBlockedAddress(ip)).toBe(true);
  });
});

describe('addressKind: public unicast addresses are allowed', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '11.0.0.1',
    '9.255.255.255',
    '100.63.255.255',
    '100.128.0.1',
    '126.255.255.255',
    '128.0.0.1',
    '169.253.0.1',
    '169.255.0.1',
    '172.15.255.255',
    '172.32.0.1',
    '192.0.1.1',
    '192.0.3.1',
    '192.169.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '198.51.101.1',
    '203.0.114.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '2a00:1450::1',
    '2001:1::1', // 2001:0::/32 is Teredo; its neighbour is not
    '2001:db9::1',
    '2003::1',
    '3ffe:ffff::1',
    '3fff:1000::1', // 3fff::/20 ends at 3fff:fff:ffff:...
    '::ffff:8.8.8.8',
    '::ffff:808:808',
  ])('%s is public', (ip) => {
    // Act / Assert
    expect(addressKind(ip)).toBeUndefined();
    expect(isBlockedAddress(ip)).toBe(false);
  });
});

describe('checkOutboundUrl', () => {
  const stub = (addresses: string[]) => ({ lookup: async () => addresses.map((address) => ({ address })) });
  const mustNotResolve = {
    lookup: async (): Promise<{ address: string }[]> => {
      throw new Error('must not resolve');
    },
  };

  it('allows anything http(s) when the guard is off', async () => {
    // Act
    const r = await checkOutboundUrl('http://127.0.0.1:9/x', false, mustNotResolve);
    // Assert
    expect(r.ok).toBe(true);
  });

  it('refuses other schemes and malformed URLs even when the guard is off', async () => {
    // Act / Assert
    expect(await checkOutboundUrl('file:///etc/passwd', false, stub([]))).toEqual({
      ok: false,
      reason: 'unsupported scheme',
    });
    expect(await checkOutboundUrl('not a url', false, stub([]))).toEqual({
      ok: false,
      reason: 'invalid url',
    });
  });

  // What the WHATWG URL parser makes of odd spellings: the guard sees the normalised address.
  it.each([
    ['http://2130706433/', '127.0.0.1', 'loopback'],
    ['http://0x7f.1/', '127.0.0.1', 'loopback'],
    ['http://127.1/', '127.0.0.1', 'loopback'],
    ['http://0177.0.0.1/', '127.0.0.1', 'loopback'],
    ['http://0x7f000001/', '127.0.0.1', 'loopback'],
    ['http://017700000001/', '127.0.0.1', 'loopback'],
    ['http://127.0.0.1./', '127.0.0.1', 'loopback'],
    ['http://127。0。0。1/', '127.0.0.1', 'loopback'],
    ['http://0/', '0.0.0.0', 'this network'],
    ['http://169.254.43518/', '169.254.169.254', 'metadata'],
    ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1', 'loopback'],
    ['http://[::ffff:7f00:1]/', '::ffff:7f00:1', 'loopback'],
    ['http://[0:0:0:0:0:ffff:7f00:1]/', '::ffff:7f00:1', 'loopback'],
    ['http://[::ffff:169.254.169.254]/latest', '::ffff:a9fe:a9fe', 'metadata'],
    ['http://[::ffff:0:127.0.0.1]/', '::ffff:0:7f00:1', 'IPv4-translated'],
    ['http://[64:ff9b::10.0.0.1]/', '64:ff9b::a00:1', 'NAT64'],
    ['http://[2002:7f00:1::]/', '2002:7f00:1::', '6to4'],
    ['http://[::1]:8080/x', '::1', 'loopback'],
    ['http://[fd00:ec2::254]/', 'fd00:ec2::254', 'metadata'],
    ['https://user:secret@10.1.2.3/hook?access_token=tok', '10.1.2.3', 'private'],
  ])('refuses %s (%s, %s) without resolving it', async (raw, address, kind) => {
    // Act
    const r = await checkOutboundUrl(raw, true, mustNotResolve);
    // Assert
    expect(r).toEqual({
      ok: false,
      reason: `address ${address} is not public (${kind})`,
      blocked: { address, kind },
    });
  });

  it('names the address and its kind, never the path, query or credentials', async () => {
    // Act
    const r = await checkOutboundUrl(
      'https://user:pw@10.1.2.3/robot/send?access_token=SECRET',
      true,
      stub([]),
    );
    // Assert
    expect(r.ok).toBe(false);
    expect(JSON.stringify(r)).not.toMatch(/SECRET|pw|robot/);
  });

  it('allows public IP literals', async () => {
    // Act / Assert
    expect((await checkOutboundUrl('https://8.8.8.8/x', true, mustNotResolve)).ok).toBe(true);
    expect((await checkOutboundUrl('https://[2606:4700:4700::1111]/x', true, mustNotResolve)).ok).toBe(true);
    expect((await checkOutboundUrl('https://[::ffff:8.8.8.8]/x', true, mustNotResolve)).ok).toBe(true);
  });

  it('refuses a name when any of its addresses is not public', async () => {
    // Act
    const r = await checkOutboundUrl(
      'https://hooks.example.com/a?token=x',
      true,
      stub(['93.184.216.34', '10.0.0.5']),
    );
    // Assert
    expect(r).toEqual({
      ok: false,
      reason: 'hooks.example.com resolves to 10.0.0.5, which is not public (private)',
      blocked: { address: '10.0.0.5', kind: 'private', name: 'hooks.example.com' },
    });
  });

  it('refuses a name that resolves to an IPv4-mapped or NAT64 address of a private one', async () => {
    // Act / Assert
    expect((await checkOutboundUrl('https://a.example/', true, stub(['::ffff:7f00:1']))).ok).toBe(false);
    expect((await checkOutboundUrl('https://a.example/', true, stub(['64:ff9b::a9fe:a9fe']))).ok).toBe(false);
  });

  it('refuses localhost, which the system resolver answers itself', async () => {
    // Act
    const r = await checkOutboundUrl('http://localhost:9/x', true);
    // Assert
    expect(r).toMatchObject({ ok: false, blocked: { kind: 'loopback' } });
  });

  it('allows a name that resolves to public addresses only', async () => {
    // Act
    const r = await checkOutboundUrl(
      'https://hooks.example.com/a',
      true,
      stub(['93.184.216.34', '2606:2800:220:1::1']),
    );
    // Assert
    expect(r.ok).toBe(true);
  });

  it('lets a name that does not resolve through (the attempt fails and is retried)', async () => {
    // Arrange
    const lookup = async (): Promise<{ address: string }[]> => {
      throw Object.assign(new Error('nope'), { code: 'ENOTFOUND' });
    };
    // Act / Assert
    expect((await checkOutboundUrl('https://nowhere.invalid/', true, { lookup })).ok).toBe(true);
  });
});
