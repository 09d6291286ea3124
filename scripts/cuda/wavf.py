import struct, sys, numpy as np
def read(p):
    b = open(p, 'rb').read()
    i = 12
    while i < len(b):
        cid, n = b[i:i+4], struct.unpack('<I', b[i+4:i+8])[0]
        if cid == b'fmt ':
            fmt = struct.unpack('<H', b[i+8:i+10])[0]
        if cid == b'data':
            d = b[i+8:i+8+n]
            return np.frombuffer(d, '<f4' if fmt in (3, 0xFFFE) else '<i2').astype(np.float64)
        i += 8 + n + (n & 1)
if __name__ == '__main__':
    a, b = read(sys.argv[1]), read(sys.argv[2])
    print(len(a), len(b), np.linalg.norm(a - b) / np.linalg.norm(b) if len(a) == len(b) else 'lengths differ')
