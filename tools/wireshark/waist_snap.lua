-- waist_snap.lua: a Wireshark dissector for SNAP, Safe and Nimble Active Packets (the waist
-- workspace's `snap-vm` crate; paper §VI.A, Fig. 3).
--
-- What it dissects: a SNAP packet, the payload of an IPv4 packet of protocol 254
-- (crates/snap-vm/src/ip.rs), laid out as crates/snap-vm/src/wire.rs defines:
--
--    byte 0  Version(4) | Flags(4) (bit 0: body words little-endian)   byte 1  reserved
--    bytes 2-3 demux port, 4-7 source, 8-11 destination (IPv4), 12-13 resource bound,
--    14-15 entry point (instruction index), 16-17 code length, 18-19 heap length,
--    20-21 stack length (all in 32-bit words), 22-23 reserved            (big-endian)
--    then the code words, the heap words and the stack words (bottom first).
--
-- Instruction words are a 7-bit opcode over a 25-bit immediate (crates/snap-vm/src/value.rs,
-- op.rs); each is shown as the disassembler prints it (snap_vm::asm::instruction: the
-- mnemonic, then the immediate, signed for int and branch immediates; ".inst 0x…" for an
-- unknown opcode). Stack values are a 7-bit tag (int, addr, float, wide, tuple, bytes) over
-- a 25-bit datum (a small integer, or the heap offset of a boxed value). Heap objects are a
-- header word (tag, length) and their payload (length words; bytes: length bytes padded to
-- whole words).
--
-- How it registers: DissectorTable "ip.proto", key 254.
--
-- Field prefix: "snap." (snap.version, snap.flags, snap.little_endian, snap.port, snap.src,
-- snap.dst, snap.rb, snap.entry, snap.code_len, snap.heap_len, snap.stack_len; per
-- instruction snap.insn (its text), snap.insn.index, snap.insn.word, snap.opcode, snap.op
-- (mnemonic), snap.imm; per stack value snap.stack.word, snap.stack.tag, snap.stack.data;
-- per heap object snap.heap.offset, snap.heap.tag, snap.heap.len, snap.heap.payload and
-- snap.heap.bytes / snap.heap.addr / snap.heap.float / snap.heap.wide / snap.heap.elem;
-- experts snap.malformed, snap.unknown_opcode, snap.heap.stray).
--
-- Install: copy this file into ~/.local/lib/wireshark/plugins/ (or run
-- `tshark -X lua_script:tools/wireshark/waist_snap.lua ...`). Lua 5.2, Wireshark 4.0 API,
-- no external modules. Any truncated or inconsistent field is flagged with an expert info;
-- every read is bounds-checked first, so the script raises no Lua error.

local IP_PROTOCOL = 254
local VERSION = 1
local HEADER_LEN = 24
local DATA_BITS = 25
local DATA_MASK = 0x1FFFFFF

local p_snap = Proto("snap", "Safe and Nimble Active Packets (SNAP)")

-- Opcodes: mnemonic and immediate kind, from crates/snap-vm/src/op.rs.
local ops = {
    [1] = { "exit", "None" },
    [2] = { "nop", "None" },
    [3] = { "ji", "Branch" },
    [4] = { "bez", "Branch" },
    [5] = { "bne", "Branch" },
    [6] = { "paj", "Int" },
    [7] = { "tpaj", "Int" },
    [8] = { "forw", "None" },
    [9] = { "forwto", "None" },
    [10] = { "send", "None" },
    [11] = { "demux", "None" },
    [12] = { "push", "Int" },
    [13] = { "pushh", "Heap" },
    [14] = { "pop", "None" },
    [15] = { "popi", "Count" },
    [16] = { "pull", "Count" },
    [17] = { "store", "Count" },
    [18] = { "swap", "None" },
    [19] = { "rot", "None" },
    [20] = { "depth", "None" },
    [97] = { "dup", "None" },
    [21] = { "getsrc", "None" },
    [22] = { "getdst", "None" },
    [23] = { "getrb", "None" },
    [24] = { "getep", "None" },
    [25] = { "getport", "None" },
    [26] = { "here", "None" },
    [27] = { "ishere", "None" },
    [28] = { "getifc", "None" },
    [29] = { "nifc", "None" },
    [30] = { "getlen", "None" },
    [31] = { "add", "None" },
    [32] = { "addi", "Int" },
    [33] = { "sub", "None" },
    [34] = { "subi", "Int" },
    [35] = { "mul", "None" },
    [36] = { "muli", "Int" },
    [37] = { "div", "None" },
    [38] = { "divi", "Int" },
    [39] = { "mod", "None" },
    [40] = { "modi", "Int" },
    [41] = { "neg", "None" },
    [94] = { "min", "None" },
    [95] = { "max", "None" },
    [96] = { "abs", "None" },
    [42] = { "and", "None" },
    [43] = { "andi", "Int" },
    [44] = { "or", "None" },
    [45] = { "ori", "Int" },
    [46] = { "xor", "None" },
    [47] = { "xori", "Int" },
    [48] = { "not", "None" },
    [49] = { "lnot", "None" },
    [50] = { "lsl", "None" },
    [51] = { "lsli", "Int" },
    [52] = { "lsr", "None" },
    [53] = { "lsri", "Int" },
    [54] = { "asr", "None" },
    [55] = { "asri", "Int" },
    [56] = { "eq", "None" },
    [57] = { "eqi", "Int" },
    [58] = { "neq", "None" },
    [59] = { "neqi", "Int" },
    [60] = { "lt", "None" },
    [61] = { "lti", "Int" },
    [62] = { "le", "None" },
    [63] = { "lei", "Int" },
    [64] = { "gt", "None" },
    [65] = { "gti", "Int" },
    [66] = { "ge", "None" },
    [67] = { "gei", "Int" },
    [68] = { "fadd", "None" },
    [69] = { "fsub", "None" },
    [70] = { "fmul", "None" },
    [71] = { "fdiv", "None" },
    [72] = { "flt", "None" },
    [73] = { "feq", "None" },
    [74] = { "itof", "None" },
    [75] = { "ftoi", "None" },
    [76] = { "mkaddr", "None" },
    [77] = { "aeq", "None" },
    [78] = { "snet", "None" },
    [79] = { "insnet", "None" },
    [80] = { "towide", "None" },
    [81] = { "wadd", "None" },
    [82] = { "wsub", "None" },
    [83] = { "wmul", "None" },
    [84] = { "wlt", "None" },
    [85] = { "weq", "None" },
    [86] = { "narrow", "None" },
    [87] = { "mktup", "Count" },
    [88] = { "nth", "Count" },
    [89] = { "length", "None" },
    [90] = { "bget", "None" },
    [91] = { "istag", "Tag" },
    [92] = { "gettag", "None" },
    [93] = { "calls", "Heap" },
}
local opcode_names = {}
for code, o in pairs(ops) do opcode_names[code] = o[1] end

local tag_names = { [0] = "int", [1] = "addr", [2] = "float", [3] = "wide", [4] = "tuple", [5] = "bytes" }

local f = {
    version = ProtoField.uint8("snap.version", "Version", base.DEC, nil, 0xF0),
    flags = ProtoField.uint8("snap.flags", "Flags", base.HEX, nil, 0x0F),
    little_endian = ProtoField.bool("snap.little_endian", "Body words little-endian", 8, nil, 0x01),
    reserved = ProtoField.bytes("snap.reserved", "Reserved"),
    port = ProtoField.uint16("snap.port", "Demux port", base.DEC),
    src = ProtoField.ipv4("snap.src", "Source"),
    dst = ProtoField.ipv4("snap.dst", "Destination"),
    rb = ProtoField.uint16("snap.rb", "Resource bound", base.DEC),
    entry = ProtoField.uint16("snap.entry", "Entry point", base.DEC),
    code_len = ProtoField.uint16("snap.code_len", "Code length (words)", base.DEC),
    heap_len = ProtoField.uint16("snap.heap_len", "Heap length (words)", base.DEC),
    stack_len = ProtoField.uint16("snap.stack_len", "Stack length (words)", base.DEC),
    code = ProtoField.none("snap.code", "Code"),
    insn = ProtoField.string("snap.insn", "Instruction"),
    insn_index = ProtoField.uint16("snap.insn.index", "Index", base.DEC),
    insn_word = ProtoField.uint32("snap.insn.word", "Word", base.HEX),
    opcode = ProtoField.uint8("snap.opcode", "Opcode", base.DEC, opcode_names),
    op = ProtoField.string("snap.op", "Mnemonic"),
    imm = ProtoField.int32("snap.imm", "Immediate", base.DEC),
    heap = ProtoField.none("snap.heap", "Heap"),
    heap_offset = ProtoField.uint32("snap.heap.offset", "Offset (words)", base.DEC),
    heap_tag = ProtoField.string("snap.heap.tag", "Tag"),
    heap_len_f = ProtoField.uint32("snap.heap.len", "Length", base.DEC),
    heap_payload = ProtoField.bytes("snap.heap.payload", "Payload"),
    heap_bytes = ProtoField.string("snap.heap.bytes", "Bytes"),
    heap_addr = ProtoField.ipv4("snap.heap.addr", "Address"),
    heap_float = ProtoField.float("snap.heap.float", "Float"),
    heap_wide = ProtoField.int64("snap.heap.wide", "Wide integer", base.DEC),
    heap_elem = ProtoField.string("snap.heap.elem", "Element"),
    heap_word = ProtoField.uint32("snap.heap.word", "Word (not an object)", base.HEX),
    stack = ProtoField.none("snap.stack", "Stack"),
    stack_word = ProtoField.uint32("snap.stack.word", "Word", base.HEX),
    stack_tag = ProtoField.string("snap.stack.tag", "Tag"),
    stack_data = ProtoField.int32("snap.stack.data", "Data", base.DEC),
    trailing = ProtoField.bytes("snap.trailing", "Bytes past the sections"),
}
local fl = {}
for _, v in pairs(f) do fl[#fl + 1] = v end
p_snap.fields = fl

local ex = {
    malformed = ProtoExpert.new("snap.malformed", "Malformed SNAP packet",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_opcode = ProtoExpert.new("snap.unknown_opcode", "Unknown SNAP opcode",
        expert.group.UNDECODED, expert.severity.WARN),
    stray = ProtoExpert.new("snap.heap.stray", "Heap word that is not an object",
        expert.group.UNDECODED, expert.severity.NOTE),
}
p_snap.experts = { ex.malformed, ex.unknown_opcode, ex.stray }

local function tag_name(code)
    return tag_names[code] or ("?" .. code)
end

-- The 25-bit field sign-extended.
local function sext25(x)
    if x >= 0x1000000 then return x - 0x2000000 end
    return x
end

-- An instruction word as snap_vm::asm::instruction prints it, and the immediate shown.
local function insn_text(w)
    local code = bit32.rshift(w, DATA_BITS)
    local uimm = bit32.band(w, DATA_MASK)
    local o = ops[code]
    if not o then return string.format(".inst 0x%08x", w), uimm end
    if o[2] == "None" and uimm == 0 then return o[1], 0 end
    if o[2] == "Int" or o[2] == "Branch" then
        local imm = sext25(uimm)
        return o[1] .. " " .. imm, imm
    end
    return o[1] .. " " .. uimm, uimm
end

-- The f32 with these bits.
local function f32(bits)
    local sign = bit32.rshift(bits, 31) == 1 and -1 or 1
    local e = bit32.band(bit32.rshift(bits, 23), 0xFF)
    local m = bit32.band(bits, 0x7FFFFF)
    if e == 0xFF then
        if m ~= 0 then return 0 / 0 end
        return sign * math.huge
    end
    if e == 0 then return sign * m * 2 ^ -149 end
    return sign * (1 + m / 0x800000) * 2 ^ (e - 127)
end

-- A byte string as the disassembler's literal: quoted if printable ASCII, else hex.
local function bytes_literal(bytes)
    local printable = true
    for i = 1, #bytes do
        local c = bytes:byte(i)
        if c < 0x20 or c >= 0x7F then printable = false end
    end
    if printable then
        return '"' .. bytes:gsub('([\\"])', "\\%1") .. '"'
    end
    return "0x" .. bytes:gsub(".", function(c) return string.format("%02x", c:byte()) end)
end

function p_snap.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "SNAP"
    local n = tvb:len()
    local root = tree:add(p_snap, tvb())
    if n < HEADER_LEN then
        root:add_proto_expert_info(ex.malformed,
            string.format("SNAP packet truncated: %d of %d header bytes", n, HEADER_LEN))
        pinfo.cols.info = string.format("SNAP truncated (%d bytes)", n)
        return n
    end
    local hdr = root:add(tvb(0, HEADER_LEN), "Header")
    local version = bit32.rshift(tvb(0, 1):uint(), 4)
    local vi = hdr:add(f.version, tvb(0, 1))
    if version ~= VERSION then
        vi:add_proto_expert_info(ex.malformed,
            string.format("SNAP version %d, expected %d", version, VERSION))
    end
    local fi = hdr:add(f.flags, tvb(0, 1))
    fi:add(f.little_endian, tvb(0, 1))
    local le = bit32.band(tvb(0, 1):uint(), 1) ~= 0
    hdr:add(f.reserved, tvb(1, 1))
    hdr:add(f.port, tvb(2, 2))
    hdr:add(f.src, tvb(4, 4))
    hdr:add(f.dst, tvb(8, 4))
    local rb, entry = tvb(12, 2):uint(), tvb(14, 2):uint()
    local code_len, heap_len, stack_len = tvb(16, 2):uint(), tvb(18, 2):uint(), tvb(20, 2):uint()
    hdr:add(f.rb, tvb(12, 2))
    local ei = hdr:add(f.entry, tvb(14, 2))
    local ci = hdr:add(f.code_len, tvb(16, 2))
    hdr:add(f.heap_len, tvb(18, 2))
    hdr:add(f.stack_len, tvb(20, 2))
    hdr:add(f.reserved, tvb(22, 2))
    local problems = {}
    local function flag(item, msg)
        item:add_proto_expert_info(ex.malformed, msg)
        problems[#problems + 1] = msg
    end
    if version ~= VERSION then problems[#problems + 1] = "version " .. version end
    if entry >= code_len then
        flag(ei, string.format("SNAP entry point %d outside the code (%d instructions)", entry, code_len))
    end
    local declared = HEADER_LEN + 4 * (code_len + heap_len + stack_len)
    if declared ~= n then
        flag(root, string.format("SNAP sections declare %d bytes but the packet has %d", declared, n))
    end

    -- Word i of the body, in the body's byte order, or nil past the end.
    local function word(i)
        local at = HEADER_LEN + 4 * i
        if at + 4 > n then return nil end
        if le then return tvb(at, 4):le_uint() end
        return tvb(at, 4):uint()
    end
    local function wrange(i, count)
        local at = math.min(HEADER_LEN + 4 * i, n)
        return tvb(at, math.max(0, math.min(4 * count, n - at)))
    end

    -- Code.
    local have_code = math.max(0, math.min(code_len, math.floor((n - HEADER_LEN) / 4)))
    local code = root:add(f.code, wrange(0, have_code))
    code:set_text(string.format("Code: %d instructions", code_len))
    local entry_text = nil
    for i = 0, code_len - 1 do
        local w = word(i)
        if not w then
            flag(code, string.format("Code truncated: %d of %d instructions present", i, code_len))
            break
        end
        local r = wrange(i, 1)
        local text, imm = insn_text(w)
        local opcode = bit32.rshift(w, DATA_BITS)
        local label = string.format("%d: %s", i, text)
        if i == entry then
            label = label .. "  <- entry"
            entry_text = text
        end
        local it = code:add(f.insn, r, text)
        it:set_text(label)
        it:add(f.insn_index, r, i):set_generated()
        it:add(f.insn_word, r, w)
        it:add(f.opcode, r, opcode)
        if ops[opcode] then
            it:add(f.op, r, ops[opcode][1])
            it:add(f.imm, r, imm)
        else
            it:add_proto_expert_info(ex.unknown_opcode, "Unknown SNAP opcode " .. opcode)
        end
    end

    -- Heap: objects (header word and payload) and stray words.
    local hbase = code_len
    local heap = root:add(f.heap, wrange(hbase, heap_len))
    heap:set_text(string.format("Heap: %d words", heap_len))
    local objects = 0
    local off = 0
    while off < heap_len do
        local h = word(hbase + off)
        if not h then
            flag(heap, string.format("Heap truncated: %d of %d words present", off, heap_len))
            break
        end
        local tag = bit32.rshift(h, DATA_BITS)
        local len = bit32.band(h, DATA_MASK)
        local pw = nil
        if tag == 5 then
            pw = math.floor((len + 3) / 4)
        elseif tag_names[tag] and tag ~= 0 then
            pw = len
        end
        if pw == nil or off + 1 + pw > heap_len then
            local it = heap:add(f.heap_word, wrange(hbase + off, 1), h)
            it:prepend_text(string.format("h%d: ", off))
            if pw == nil then
                it:add_proto_expert_info(ex.stray, string.format(
                    "Heap word %d (tag %s) is not an object", off, tag_name(tag)))
            else
                it:add_proto_expert_info(ex.stray, string.format(
                    "Heap object at %d (%s, length %d) overruns the heap", off, tag_name(tag), len))
            end
            off = off + 1
        else
            objects = objects + 1
            local ot = heap:add(wrange(hbase + off, 1 + pw), "")
            ot:add(f.heap_offset, wrange(hbase + off, 1), off):set_generated()
            ot:add(f.heap_tag, wrange(hbase + off, 1), tag_names[tag])
            ot:add(f.heap_len_f, wrange(hbase + off, 1), len)
            local desc
            if pw > 0 and word(hbase + off + pw) == nil then
                flag(ot, string.format("Heap object at %d truncated", off))
                desc = "truncated"
            else
                local pr = pw > 0 and wrange(hbase + off + 1, pw) or nil
                if pr then ot:add(f.heap_payload, pr) end
                local p = {}
                for j = 1, pw do p[j] = word(hbase + off + j) end
                if tag == 5 then
                    local s = {}
                    for j = 1, pw do
                        local wv = p[j]
                        for k = 3, 0, -1 do s[#s + 1] = string.char(bit32.band(bit32.rshift(wv, 8 * k), 0xFF)) end
                    end
                    local bytes = table.concat(s):sub(1, len)
                    desc = bytes_literal(bytes)
                    ot:add(f.heap_bytes, pr or wrange(hbase + off, 1), desc)
                elseif tag == 1 or tag == 2 then
                    if len == 1 then
                        if tag == 1 then
                            local a = string.format("%d.%d.%d.%d", bit32.rshift(p[1], 24),
                                bit32.band(bit32.rshift(p[1], 16), 0xFF),
                                bit32.band(bit32.rshift(p[1], 8), 0xFF), bit32.band(p[1], 0xFF))
                            ot:add(f.heap_addr, pr, Address.ip(a))
                            desc = a
                        else
                            local x = f32(p[1])
                            ot:add(f.heap_float, pr, x)
                            desc = tostring(x)
                        end
                    else
                        flag(ot, string.format("%s object of length %d, expected 1", tag_names[tag], len))
                        desc = "bad length"
                    end
                elseif tag == 3 then
                    if len == 2 then
                        local v = Int64.new(p[2], p[1])
                        ot:add(f.heap_wide, pr, v)
                        desc = tostring(v)
                    else
                        flag(ot, string.format("wide object of length %d, expected 2", len))
                        desc = "bad length"
                    end
                else -- tuple
                    local els = {}
                    for j = 1, pw do
                        local v = p[j]
                        local t = bit32.rshift(v, DATA_BITS)
                        local e
                        if t == 0 then e = tostring(sext25(bit32.band(v, DATA_MASK)))
                        else e = tag_name(t) .. "@h" .. bit32.band(v, DATA_MASK) end
                        els[#els + 1] = e
                        ot:add(f.heap_elem, wrange(hbase + off + j, 1), e)
                    end
                    desc = "(" .. table.concat(els, ", ") .. ")"
                end
            end
            ot:set_text(string.format("h%d: %s, length %d: %s", off, tag_names[tag], len, desc))
            off = off + 1 + pw
        end
    end

    -- Stack, bottom first; the packet's last word is the top.
    local sbase = code_len + heap_len
    local stack = root:add(f.stack, wrange(sbase, stack_len))
    stack:set_text(string.format("Stack: %d values (bottom first)", stack_len))
    local shown = {}
    for i = 0, stack_len - 1 do
        local v = word(sbase + i)
        if not v then
            flag(stack, string.format("Stack truncated: %d of %d values present", i, stack_len))
            break
        end
        local r = wrange(sbase + i, 1)
        local t = bit32.rshift(v, DATA_BITS)
        local d = bit32.band(v, DATA_MASK)
        local text
        if t == 0 then
            d = sext25(d)
            text = "int " .. d
        else
            text = tag_name(t) .. " @h" .. d
        end
        shown[#shown + 1] = (t == 0) and tostring(d) or (tag_name(t) .. "@h" .. d)
        local it = stack:add(f.stack_word, r, v)
        it:set_text(string.format("[%d]%s: %s", i, i == stack_len - 1 and " (top)" or "", text))
        it:add(f.stack_tag, r, tag_name(t))
        it:add(f.stack_data, r, d)
    end

    if n > declared and declared >= HEADER_LEN then
        root:add(f.trailing, tvb(declared, n - declared))
    end
    root:append_text(string.format(", rb %d, entry %d, %d instructions, %d heap objects, %d stack values",
        rb, entry, code_len, objects, stack_len))
    local info = string.format("SNAP rb=%d entry=%d", rb, entry)
    if entry_text then info = info .. " (" .. entry_text .. ")" end
    info = info .. string.format(" %d insns, %d heap words, stack [%s]", code_len, heap_len, table.concat(shown, " "))
    if #problems > 0 then info = info .. " [malformed: " .. problems[1] .. "]" end
    pinfo.cols.info = info
    return n
end

DissectorTable.get("ip.proto"):add(IP_PROTOCOL, p_snap)
