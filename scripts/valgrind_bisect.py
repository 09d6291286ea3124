#!/usr/bin/env python3
"""Find the code points on which espeak-ng reads uninitialised or freed memory (valgrind).

Usage: scripts/valgrind_bisect.py BIN VOICE FROM-TO...   (hex ranges, e.g. 900-9FF)

BIN is the espeak_codepoints example built with the sanitiser's skip list emptied (or any
build of it: then only what the list lets through is searched). Each range that valgrind
flags is halved until single code points remain; a range whose halves are both clean is
reported whole (its code points fail only together). Used to make
`phonemes::ESPEAK_152_BAD` (docs/RELIABILITY.md).
"""
import concurrent.futures as cf
import subprocess
import sys

binary = sys.argv[1]
voice = sys.argv[2]
def bad(lo,hi):
    r=subprocess.run(["valgrind","-q","--error-exitcode=1","--log-file=/dev/null",binary,voice,f"{lo:X}",f"{hi:X}"],capture_output=True)
    return r.returncode!=0
def find(lo,hi,out):
    # lo..hi known bad
    if lo==hi:
        out.append((lo,hi)); return
    mid=(lo+hi)//2
    with cf.ThreadPoolExecutor(2) as ex:
        a,b=ex.map(lambda r: bad(*r), [(lo,mid),(mid+1,hi)])
    if not a and not b:
        out.append((lo,hi)); return  # interaction
    if a: find(lo,mid,out)
    if b: find(mid+1,hi,out)
out=[]
for arg in sys.argv[3:]:
    lo,hi=[int(x,16) for x in arg.split("-")]
    find(lo,hi,out)
    sys.stderr.write(f"{arg} done\n")
for lo,hi in out:
    print(f"U+{lo:04X}" if lo==hi else f"U+{lo:04X}..U+{hi:04X} (together)", " ".join(chr(c) for c in range(lo,min(hi,lo+8)+1)))
