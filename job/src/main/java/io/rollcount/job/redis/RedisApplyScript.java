package io.rollcount.job.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * The server-side Lua script that applies a batch of {@link RedisWrite}s, and the encoding of a batch into
 * its {@code KEYS} and {@code ARGV}.
 *
 * <p>One call applies every write of one hash tag (one counter: all its keys live in one Redis Cluster
 * slot), so a flush sends Redis one {@code EVALSHA} per counter, not one command per key. A script runs
 * atomically: no reader sees a value without its version, a sorted set half replaced, or a HyperLogLog
 * between its temporary copy and the merge.
 *
 * <p>Semantics per kind (numbers are compared as decimal integer strings, exactly, without the 2^53
 * limit of Lua's doubles):
 * <ul>
 *   <li>COUNT ({@code KEYS} key[, versionKey]): skipped if the stored version is {@code >= version}, or if
 *       {@code monotone} and the stored value is larger than the new one; else {@code SET key value} and
 *       {@code SET versionKey version}, both with {@code PX ttl} when ttl &gt; 0 (so value and version expire
 *       together, {@code ttl} after this write) and without expiry when ttl is 0. A monotone write updates a
 *       version that exists but creates none: a value only ever written upward needs no version, and a
 *       value that once went down (a versioned write) stays guarded against replays of older states.
 *   <li>MAX ({@code KEYS} key): {@code SET key value} if there is no value or the new one is larger.
 *   <li>growing HLL ({@code KEYS} key, tmpKey; a sketch that only grows while the writer lives, see
 *       {@link RedisWrite#growingHll}): only the newest sketch of the call counts, and it carries the writer's
 *       lineage ({@code ARGV[2]}: three bytes, unique to one writer's life) in header bytes 6..8, which Redis's
 *       format leaves unused (PFADD, PFMERGE and PFCOUNT ignore them and keep them). If the key holds a value
 *       with this lineage's mark, {@code SET key sketch}: what is there is an older sketch of the same
 *       lineage, which the new one contains. Else if the key does not exist and the sketch is well formed,
 *       {@code SET key sketch NX}: the key is the lineage's from now on. Else {@code SET tmpKey sketch; PFMERGE
 *       tmpKey key}: if the union has exactly the sketch's registers (the key had none above them: a restored
 *       job whose sketch has caught up with what the run before it wrote), {@code SET key sketch}, and the key
 *       is the lineage's again; else {@code SET key union} with the mark cleared (it holds registers that no
 *       lineage has, so the next write merges again). Then {@code DEL tmpKey}. The key gets {@code PX ttl}
 *       when ttl &gt; 0. So the usual write is one SET (PFMERGE decodes both values into 16,384 registers
 *       and encodes the result again: about 20 microseconds of the server's one thread), no bookkeeping key
 *       is needed, and a key that another lineage (an earlier run, a restore) or PFADD wrote is never shrunk:
 *       a SET of a sketch only ever replaces registers that the sketch holds too.
 *   <li>HLL ({@code KEYS} key, tmpKey): {@code SET key sketch NX} for the first sketch if it is a well-formed
 *       HyperLogLog (into a key that does not exist yet, the merge of one sketch into nothing: the same
 *       registers, and no temporary key); for
 *       every other sketch {@code SET tmpKey sketch; PFMERGE key tmpKey}, then {@code DEL tmpKey}; and
 *       {@code PEXPIRE key ttl} when ttl &gt; 0. PFMERGE takes the register-wise
 *       maximum, so the key never shrinks and a replayed sketch changes nothing.
 *   <li>ZSET ({@code KEYS} key[, versionKey]): skipped if the stored version is {@code > version}; else
 *       {@code SET versionKey version} (first: Redis refuses a SET at maxmemory, not a DEL, which would let the
 *       rest of the script past its OOM check), {@code DEL key}, {@code ZADD} of every member, and
 *       {@code PEXPIRE} of both when ttl &gt; 0.
 * </ul>
 * Every value a COUNT compares against (its versionKey, and its key when monotone) and the key of a
 * growing HLL are read first, for the whole call, by one {@code MGET} of {@code KEYS[1..ARGV[1]]}
 * (a key appears once per call: the writer coalesces per key); the writes follow in {@code ARGV[3..]}, their
 * keys after those. Where that read found no string value the write is a {@code SET ... NX}, so a key of
 * another type still fails with WRONGTYPE instead of being overwritten.
 *
 * <p>Errors are per key: each write runs under Lua's {@code pcall}, so a Redis error such as
 * {@code WRONGTYPE} (a key of another type under the prefix) or a value that is not a decimal integer
 * where one is expected rejects that write's key only (the key whose command failed: a version key, say)
 * and the call goes on with its other writes. The script returns {@code {applied, skipped, key1, error1,
 * key2, error2, ...}}: the rejected keys with their errors. An error that a retry can cure
 * ({@code OOM}, {@code MISCONF}, {@code NOREPLICAS}, {@code LOADING}, {@code BUSY}, {@code TRYAGAIN},
 * {@code READONLY}, {@code MASTERDOWN}, {@code CLUSTERDOWN}) ends the call with that error instead, for the
 * writer to retry the whole call: Redis refuses a script's first write on OOM, so nothing was applied then,
 * and any write already applied is idempotent. An ACL refusal ({@code NOPERM}) fails the call naming the
 * key, for the writer to fail the job: a wrong ACL is the operator's to fix, not one key's. So does a fault
 * of the script itself.
 */
final class RedisApplyScript {

    static final String SOURCE = """
            -- the key whose command failed: what a rejection names (set just before the error is raised)
            local failkey = nil
            local function fail(k, msg)
              failkey = k
              error({err = msg})
            end
            -- a command on key k: an error names k (redis.call raises it, the write's pcall catches it)
            local function call(k, ...)
              failkey = k
              return redis.call(...)
            end
            local function int(k, s)
              if not string.match(s, '^%-?%d+$') then fail(k, 'ERR rollcount: value is not an integer') end
              return s
            end
            local function cmp(a, b)
              local na = string.sub(a, 1, 1) == '-'
              local nb = string.sub(b, 1, 1) == '-'
              if na ~= nb then return na and -1 or 1 end
              local r
              if #a ~= #b then r = (#a < #b) and -1 or 1
              elseif a == b then r = 0
              else r = (a < b) and -1 or 1 end
              if na then r = -r end
              return r
            end
            local function set(k, v, ttl) -- SET replaces a value of any type (it can still meet OOM or MISCONF)
              failkey = k
              if ttl ~= '0' then redis.call('SET', k, v, 'PX', ttl) else redis.call('SET', k, v) end
            end
            local function setnx(k, v, ttl)
              if ttl ~= '0' then return call(k, 'SET', k, v, 'PX', ttl, 'NX') end
              return call(k, 'SET', k, v, 'NX')
            end
            -- SET, or SET NX where the prefetch found no string value: then a key of another type errors
            local function put(k, v, ttl, absent)
              if not absent then return set(k, v, ttl) end
              if not setnx(k, v, ttl) then fail(k, 'WRONGTYPE Operation against a key holding the wrong kind of value') end
            end
            -- PFMERGE of one sketch into k through the scratch key tmp (which the caller deletes after its
            -- merges), or with intotmp of k into tmp (the union left in tmp, k unchanged)
            local function merge(k, tmp, sketch, intotmp)
              call(tmp, 'SET', tmp, sketch)
              local r
              if intotmp then r = redis.pcall('PFMERGE', tmp, k) else r = redis.pcall('PFMERGE', k, tmp) end
              if type(r) == 'table' and r.err then
                redis.pcall('DEL', tmp)
                fail(k, r.err)
              end
            end
            local function validhll(s)
              -- Redis's HyperLogLog string: 'HYLL', encoding (0 dense, 1 sparse), 16-byte header, registers
              if #s < 16 or string.sub(s, 1, 4) ~= 'HYLL' then return false end
              local enc = string.byte(s, 5)
              if enc == 0 then return #s == 12304 end
              if enc ~= 1 then return false end
              local regs, i = 0, 17
              while i <= #s do
                local b = string.byte(s, i)
                if b >= 128 then regs = regs + (b % 4) + 1; i = i + 1
                elseif b >= 64 then
                  if i + 1 > #s then return false end
                  regs = regs + (b - 64) * 256 + string.byte(s, i + 1) + 1; i = i + 2
                else regs = regs + b + 1; i = i + 1 end
              end
              return regs == 16384
            end
            -- every value the writes compare against, read up front with one MGET (KEYS[1..ARGV[1]])
            local nreads = tonumber(ARGV[1])
            local pre, pi = {}, 1
            local i = 1
            while i <= nreads do
              local j = math.min(nreads, i + 999)
              local r = redis.call('MGET', unpack(KEYS, i, j))
              for x = 1, #r do pre[i + x - 1] = r[x] end
              i = j + 1
            end
            -- a COUNT's kind says whether it has a version key ('v') and is monotone ('m')
            local COUNT = {C = 0, Cv = 1, Cm = 2, Cvm = 3}
            -- the writer's lineage (three bytes, never zero) marks its growing sketches; zero marks none
            local LINEAGE, UNMARKED = ARGV[2], string.char(0, 0, 0)
            -- errors a retry of the whole call can cure (the server is briefly unable to write): the call fails
            -- with them, and the writer retries it. Redis refuses a script's first write on OOM, so none is applied.
            local TRANSIENT = {'OOM', 'MISCONF', 'NOREPLICAS', 'LOADING', 'BUSY', 'TRYAGAIN', 'READONLY',
              'MASTERDOWN', 'CLUSTERDOWN'}
            -- every other error rejects one write's key: the other writes of the call go on; the call returns the
            -- rejected keys with their errors
            local rejected = {}
            local function attempt(k, f, ...)
              failkey = nil
              local ok, e = pcall(f, ...)
              if ok then return true end
              e = tostring(type(e) == 'table' and e.err or e)
              for _, p in ipairs(TRANSIENT) do
                if string.sub(e, 1, #p + 1) == p .. ' ' then error({err = e}) end
              end
              -- refused access is the operator's to fix, not one key's: it fails the call, naming the key
              for _, p in ipairs({'NOPERM', 'NOAUTH', 'WRONGPASS'}) do
                if string.sub(e, 1, #p + 1) == p .. ' ' then error({err = e .. ' (key ' .. (failkey or k) .. ')'}) end
              end
              -- a fault of the script itself is no key's: it fails the call
              if string.match(e, '^user_script:') or (failkey == nil and not string.match(e, '^ERR rollcount')) then
                error({err = 'ERR rollcount script: ' .. e})
              end
              rejected[#rejected + 1] = failkey or k
              rejected[#rejected + 1] = e
              return false
            end
            local ki, ai, applied, skipped = nreads + 1, 3, 0, 0
            local function arg() local a = ARGV[ai]; ai = ai + 1; return a end
            local function key() local k = KEYS[ki]; ki = ki + 1; return k end
            -- one function per kind of write, run under pcall with its arguments (no closure per write)
            local function wcount(k, vk, sv, cur, mono, value, version, ttl)
              if (sv and cmp(int(vk, sv), version) >= 0) or (cur and cmp(int(k, cur), value) > 0) then
                skipped = skipped + 1
              else
                put(k, value, ttl, mono and not cur)
                -- a monotone write keeps a version current where one exists, but creates none
                if vk and (not mono or sv) then put(vk, version, ttl, not sv) end
                applied = applied + 1
              end
            end
            local function wmax(k, value, ttl)
              local cur = call(k, 'GET', k)
              if cur and cmp(int(k, cur), value) >= 0 then skipped = skipped + 1 else
                set(k, value, ttl)
                applied = applied + 1
              end
            end
            local function wwatermark(h, k, subtask, parallelism, value)
              call(h, 'HSET', h, subtask, value)
              call(h, 'PEXPIRE', h, '604800000')
              local min = nil
              if call(h, 'HLEN', h) >= parallelism then
                for _, v in ipairs(call(h, 'HVALS', h)) do
                  if min == nil or cmp(v, min) < 0 then min = v end
                end
              end
              local cur = nil
              if min then cur = call(k, 'GET', k) end
              if min and (not cur or cmp(int(k, cur), min) < 0) then
                set(k, min, '0')
                applied = applied + 1
              else skipped = skipped + 1 end
            end
            -- a growing sketch (see RedisWrite.growingHll), marked with this writer's lineage in header bytes
            -- 6..8: where the key still holds that mark, the newest sketch contains it and replaces it (a SET,
            -- not a merge); a new key takes it as it is; anything else is merged
            local function wgrowing(k, tmp, cur, last, ttl)
              if cur and LINEAGE ~= UNMARKED and string.sub(cur, 6, 8) == LINEAGE and string.sub(cur, 1, 4) == 'HYLL' then
                set(k, last, ttl)
              elseif cur or not (validhll(last) and setnx(k, last, ttl)) then
                -- the union of the sketch and the key, in the scratch key. If it is the sketch itself (no
                -- register of the key above the sketch's), the key takes the sketch and is this lineage's
                -- from now on: a restored job whose sketch has caught up takes its keys back. Else the key
                -- takes the union, marked as nobody's.
                merge(k, tmp, last, true)
                local union = call(tmp, 'GET', tmp)
                call(tmp, 'DEL', tmp)
                if string.byte(union, 5) == string.byte(last, 5) and string.sub(union, 17) == string.sub(last, 17) then
                  set(k, last, ttl)
                else
                  set(k, string.sub(union, 1, 5) .. UNMARKED .. string.sub(union, 9), ttl)
                end
              end
              applied = applied + 1
            end
            -- sketches ARGV[from .. from + n - 1] merged into k
            local function whll(k, tmp, from, n, ttl)
              local merged = false
              for i = 1, n do
                local sketch = ARGV[from + i - 1]
                -- into a new key the first sketch goes as it is (the merge of it into nothing: the same
                -- registers, kept sparse, no temporary key); SET NX leaves an existing key alone
                if not (i == 1 and validhll(sketch) and call(k, 'SET', k, sketch, 'NX')) then
                  merge(k, tmp, sketch)
                  merged = true
                end
              end
              if merged then call(tmp, 'DEL', tmp) end
              if ttl ~= '0' then call(k, 'PEXPIRE', k, ttl) end
              applied = applied + 1
            end
            -- members and scores ARGV[from .. from + 2n - 1] replace the sorted set k
            local function wzset(k, vk, version, ttl, from, n)
              if vk then
                local sv = call(vk, 'GET', vk)
                if sv and cmp(int(vk, sv), version) > 0 then
                  skipped = skipped + 1
                  return
                end
              end
              -- the version first: a SET, which Redis refuses at maxmemory, where the DEL below is not refused
              -- and would let the rest of the script past Redis's OOM check
              if vk then set(vk, version, ttl) end
              call(k, 'DEL', k)
              local i = 0
              while i < n do
                local m = math.min(n - i, 200)
                call(k, 'ZADD', k, unpack(ARGV, from + 2 * i, from + 2 * (i + m) - 1))
                i = i + m
              end
              if ttl ~= '0' and n > 0 then call(k, 'PEXPIRE', k, ttl) end
              applied = applied + 1
            end
            -- The writes run without a pcall each while none fails (a pcall per write costs the server time);
            -- once one fails, it and every write after it run each under its own pcall (see attempt). Writes
            -- are idempotent, so the failed one applies again harmlessly where it got halfway.
            local safe, mai, mki, mpi = false, ai, ki, pi
            local function run()
              while ai <= #ARGV do
              mai, mki, mpi = ai, ki, pi
              local kind = ARGV[ai]
              ai = ai + 1
              local cf = COUNT[kind]
              if cf then
                local value, version, ttl = ARGV[ai], ARGV[ai + 1], ARGV[ai + 2]
                ai = ai + 3
                local k = KEYS[ki]
                ki = ki + 1
                local vk, sv, cur, mono = nil, false, false, cf >= 2
                if cf == 1 or cf == 3 then vk = KEYS[ki]; ki = ki + 1; sv = pre[pi]; pi = pi + 1 end
                if mono then cur = pre[pi]; pi = pi + 1 end
                if safe then attempt(k, wcount, k, vk, sv, cur, mono, value, version, ttl) else wcount(k, vk, sv, cur, mono, value, version, ttl) end
              elseif kind == 'M' then
                local value, ttl = arg(), arg()
                local k = key()
                if safe then attempt(k, wmax, k, value, ttl) else wmax(k, value, ttl) end
              elseif kind == 'W' then
                local subtask, parallelism, value = arg(), tonumber(arg()), arg()
                local h, k = key(), key()
                if safe then attempt(k, wwatermark, h, k, subtask, parallelism, value) else wwatermark(h, k, subtask, parallelism, value) end
              elseif kind == 'H' and ARGV[ai + 2] == '1' then
                local n, ttl = tonumber(ARGV[ai]), ARGV[ai + 1]
                ai = ai + 3
                local k, tmp = KEYS[ki], KEYS[ki + 1]
                ki = ki + 2
                local last = ARGV[ai + n - 1]
                ai = ai + n
                local cur = pre[pi]
                pi = pi + 1
                if safe then attempt(k, wgrowing, k, tmp, cur, last, ttl) else wgrowing(k, tmp, cur, last, ttl) end
              elseif kind == 'H' then
                local n, ttl = tonumber(arg()), arg()
                ai = ai + 1 -- no lineage
                local k, tmp = key(), key()
                local from = ai
                ai = ai + n
                if safe then attempt(k, whll, k, tmp, from, n, ttl) else whll(k, tmp, from, n, ttl) end
              elseif kind == 'Z' then
                local hasv, version, ttl, n = arg(), arg(), arg(), tonumber(arg())
                local k = key()
                local vk = nil
                if hasv == '1' then vk = key() end
                local from = ai
                ai = ai + 2 * n
                if safe then attempt(k, wzset, k, vk, version, ttl, from, n) else wzset(k, vk, version, ttl, from, n) end
              else
                error({err = 'ERR rollcount: unknown write kind ' .. tostring(kind)})
              end
              end
            end
            if not pcall(run) then
              safe, ai, ki, pi = true, mai, mki, mpi
              run()
            end
            -- applied, skipped, then each rejected key and its error
            local out = {applied, skipped}
            for _, x in ipairs(rejected) do out[#out + 1] = x end
            return out
            """;

    static final String SHA1 = sha1Hex(SOURCE);

    /** A COUNT's kind in ARGV, by (has a version key ? 1 : 0) | (monotone ? 2 : 0): one argument for three. */
    private static final byte[][] COUNT_KINDS = {b("C"), b("Cv"), b("Cm"), b("Cvm")};
    private static final byte[] ONE = b("1");
    private static final byte[] ZERO = b("0");

    private RedisApplyScript() {}

    /** KEYS and ARGV of one script call, built up write by write. */
    static final class Call {
        /** Keys whose values the script compares against, read with one MGET before any write, in order of use. */
        final List<byte[]> reads = new ArrayList<>();
        final List<byte[]> keys = new ArrayList<>();
        final List<byte[]> args = new ArrayList<>();
        /** The growing sketches among {@link #args}: they get the writer's lineage mark when sent. */
        final List<byte[]> growing = new ArrayList<>();
        int writes;
        /** The first key, for error messages. */
        String firstKey;

        /** A call of its own, sent after the counters' calls: the watermark, or a key without a hash tag. */
        boolean isWatermarkOrUntagged;

        boolean isEmpty() {
            return writes == 0;
        }

        /** Appends the writes of {@code other} (the script applies them in order, all in one atomic call). */
        void append(Call other) {
            reads.addAll(other.reads);
            keys.addAll(other.keys);
            args.addAll(other.args);
            growing.addAll(other.growing);
            writes += other.writes;
            if (firstKey == null) firstKey = other.firstKey;
        }

        void add(RedisWrite w, List<byte[]> hllSketches, String tmpKey) {
            if (firstKey == null) firstKey = w.key;
            writes++;
            switch (w.kind) {
                case RedisWrite.COUNT -> {
                    boolean hasV = w.versionKey != null;
                    args.add(COUNT_KINDS[(hasV ? 1 : 0) | (w.monotone ? 2 : 0)]);
                    args.add(b(Long.toString(w.value)));
                    args.add(b(Long.toString(w.version)));
                    args.add(b(Long.toString(w.ttlMillis)));
                    byte[] key = b(w.key);
                    keys.add(key);
                    if (hasV) {
                        byte[] versionKey = b(w.versionKey);
                        keys.add(versionKey);
                        reads.add(versionKey);
                    }
                    if (w.monotone) reads.add(key);
                }
                case RedisWrite.MAX -> {
                    args.add(b("M"));
                    args.add(b(Long.toString(w.value)));
                    args.add(b(Long.toString(w.ttlMillis)));
                    keys.add(b(w.key));
                }
                case RedisWrite.HLL -> {
                    args.add(b("H"));
                    args.add(b(Integer.toString(hllSketches.size())));
                    args.add(b(Long.toString(w.ttlMillis)));
                    args.add(w.monotone ? ONE : ZERO);
                    args.addAll(hllSketches);
                    byte[] key = b(w.key);
                    keys.add(key);
                    keys.add(b(tmpKey));
                    if (w.monotone) {
                        reads.add(key);
                        growing.add(hllSketches.get(hllSketches.size() - 1));
                    }
                }
                case RedisWrite.ZSET -> {
                    boolean hasV = w.versionKey != null;
                    int n = w.members == null ? 0 : w.members.length;
                    args.add(b("Z"));
                    args.add(b(hasV ? "1" : "0"));
                    args.add(b(Long.toString(w.version)));
                    args.add(b(Long.toString(w.ttlMillis)));
                    args.add(b(Integer.toString(n)));
                    for (int i = 0; i < n; i++) {
                        args.add(b(score(w.scores[i])));
                        args.add(b(w.members[i]));
                    }
                    keys.add(b(w.key));
                    if (hasV) keys.add(b(w.versionKey));
                }
                default -> throw new IllegalArgumentException("unknown RedisWrite kind " + w.kind + " for key " + w.key);
            }
        }

        /** The script's KEYS: the keys it reads first, then the keys of the writes. */
        List<byte[]> scriptKeys() {
            List<byte[]> all = new ArrayList<>(reads.size() + keys.size());
            all.addAll(reads);
            all.addAll(keys);
            return all;
        }

        /**
         * The script's ARGV: the number of keys it reads first, the writer's lineage, then the writes, the
         * growing sketches marked with that lineage (header bytes 6..8, which Redis leaves unused).
         */
        List<byte[]> scriptArgs(byte[] lineage) {
            for (byte[] sketch : growing) {
                if (sketch.length >= 16) System.arraycopy(lineage, 0, sketch, LINEAGE_OFFSET, LINEAGE_BYTES);
            }
            List<byte[]> all = new ArrayList<>(args.size() + 2);
            all.add(b(Integer.toString(reads.size())));
            all.add(lineage);
            all.addAll(args);
            return all;
        }
    }

    /** Where a lineage's mark sits in a Redis HyperLogLog value: the header's three unused bytes. */
    static final int LINEAGE_OFFSET = 5;
    static final int LINEAGE_BYTES = 3;

    /** The mark of lineage number {@code n} (from 1): three bytes, big-endian, never all zero (zero marks no lineage). */
    static byte[] lineageMark(long n) {
        long v = Math.floorMod(n - 1, (1L << 24) - 1) + 1;
        return new byte[] {(byte) (v >>> 16), (byte) (v >>> 8), (byte) v};
    }

    /**
     * The job's watermark: subtask {@code subtask} of {@code parallelism} sink writers has written
     * everything before {@code watermark}. Each writer's own watermark goes into the hash {@code perWriter}
     * (one per job and parallelism, expiring a week after its last write); once every writer has reported,
     * their minimum goes into {@code target} if larger. So {@code rc:meta:watermark} never runs ahead of
     * a writer that still has window values to write.
     */
    static Call watermark(String perWriter, String target, int subtask, int parallelism, long watermark) {
        Call c = new Call();
        c.firstKey = target;
        c.writes = 1;
        c.args.add(b("W"));
        c.args.add(b(Integer.toString(subtask)));
        c.args.add(b(Integer.toString(parallelism)));
        c.args.add(b(Long.toString(watermark)));
        c.keys.add(b(perWriter));
        c.keys.add(b(target));
        return c;
    }

    /** A score as ZADD reads it: Java's shortest round-trip decimal, or +inf/-inf. */
    static String score(double d) {
        if (Double.isNaN(d)) throw new IllegalArgumentException("NaN score");
        if (d == Double.POSITIVE_INFINITY) return "+inf";
        if (d == Double.NEGATIVE_INFINITY) return "-inf";
        return Double.toString(d);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static String sha1Hex(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1").digest(b(text)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
