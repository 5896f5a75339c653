-- waist_esp.lua: a Wireshark dissector for ESP, Ephemeral State Processing (the waist
-- workspace's `esp-proto` crate; paper §2.5, Fig. 4).
--
-- What it dissects: one ESP instruction, i.e. the 8-byte ESP header
--
--    byte 0  Version(4) | Loc: I O C (3) | Err(1)
--    byte 1  RB(1) | Code(3) | reserved(4)
--    byte 2  Opcode            byte 3  Operand len
--    bytes 4-7  Computation ID (CID), big-endian
--
-- followed by exactly "Operand len" operand bytes, decoded per opcode (tags and values are
-- 64-bit big-endian; operators, parameters, k and w one byte; the robust limit two bytes;
-- then w IDmap words), as crates/esp-proto/src/{wire/header.rs,codec.rs,instr.rs} define.
-- Beyond the built-ins (opcodes 1-17):
--   * opcode 32, inline microcode (crates/esp-micro/src/body.rs): [code words c: u8]
--     [heap words h: u8][entry: u8][code: c 32-bit words][heap: h 32-bit words][operands:
--     n 64-bit words, n <= 8], big-endian; each code word shown as the SNAP disassembler
--     prints it (mnemonic and immediate, ".inst 0x..." for an unknown opcode);
--   * opcodes 64-127, installed instructions: "installed instruction N", the operand field
--     n 64-bit operands.
--
-- How it registers, one entry per carrier (crates/esp-proto/src/wire/ip.rs):
--   * dedicated packets, IPv4 protocol / IPv6 next header 253: DissectorTable "ip.proto"
--     (the IPv6 dissector looks its next headers up in the same table); the bytes after
--     the instruction are the application's payload, handed to the "data" dissector;
--   * IPv4 option 158 (beside a Router Alert): DissectorTable "ip.option", which hands us
--     the option with its type and length bytes;
--   * IPv6 hop-by-hop option 0x3E: Wireshark 4.0 has no dissector table for IPv6 options
--     (unknown ones are shown as opaque bytes), so a postdissector reads back the
--     hop-by-hop headers the IPv6 dissector found (field "ipv6.hopopts", whose range is
--     the whole extension header in the packet), walks their TLV options itself and
--     dissects the data of every option of type 0x3E.  This touches no other protocol's
--     parsing and finds the option wherever it sits among Pad1/PadN or other options.
--     The same postdissector prefixes the Info column of packets carrying a piggybacked
--     instruction (the transport dissected after the option rewrites that column).
--
-- Protocol filter name: "waist_esp" ("esp" is IPsec's). Field prefix: "esp." (esp.version,
-- esp.loc, esp.loc.input/.central/.output, esp.err, esp.rb, esp.errcode, esp.opcode,
-- esp.operand_len, esp.cid, esp.carrier, esp.tag, esp.value, esp.thresh, esp.cmp,
-- esp.combine, esp.param, esp.limit, esp.k, esp.words, esp.idmap, esp.operand; inline
-- microcode esp.micro.code_words, esp.micro.heap_words, esp.micro.entry, esp.micro.insn (its
-- text), esp.micro.word, esp.micro.heap; experts esp.malformed,
-- esp.unknown_opcode, esp.bad_operator, esp.aborted). None collides with IPsec's fields.
--
-- Install: copy this file into ~/.local/lib/wireshark/plugins/ (or run
-- `tshark -X lua_script:tools/wireshark/waist_esp.lua ...`). Lua 5.2, Wireshark 4.0 API,
-- no external modules.  Any truncated or bad field is flagged with an expert info; the
-- script checks lengths before every read, so it raises no Lua error.

local IP_PROTOCOL = 253
local IPV4_OPTION = 158
local IPV6_HBH_OPTION = 0x3E
local VERSION = 1
local HEADER_LEN = 8

local p_esp = Proto("waist_esp", "Ephemeral State Processing (ESP)")

local opcode_names = {
    [1] = "COUNT", [2] = "COMPARE", [3] = "COLLECT", [4] = "RCHLD", [5] = "RCOLLECT",
    [6] = "GET", [7] = "PUT", [8] = "UPDATE", [9] = "MARK", [10] = "LASTMARK",
    [11] = "SUBCAST", [12] = "PARAM", [13] = "PUTPARAM", [14] = "TEST", [15] = "EXISTS",
    [16] = "ABSENT", [17] = "CSWAP", [32] = "inline microcode",
}
-- Opcodes a router maps to instructions its operator installed (esp_proto::instr::INSTALLED).
local INSTALLED_FIRST, INSTALLED_LAST = 64, 127
for op = INSTALLED_FIRST, INSTALLED_LAST do
    opcode_names[op] = "installed instruction " .. op
end
local OP_MICRO = 32
local MICRO_MAX_OPERANDS = 8
-- SNAP opcodes: mnemonic and immediate kind (None, Int, Branch, Count, Heap, Tag), the
-- table of waist_snap.lua (from crates/snap-vm/src/op.rs), for inline microcode's code.
local snap_ops = {
    [1] = "exit N", [2] = "nop N", [3] = "ji B", [4] = "bez B", [5] = "bne B", [6] = "paj I",
    [7] = "tpaj I", [8] = "forw N", [9] = "forwto N", [10] = "send N", [11] = "demux N",
    [12] = "push I", [13] = "pushh H", [14] = "pop N", [15] = "popi C", [16] = "pull C",
    [17] = "store C", [18] = "swap N", [19] = "rot N", [20] = "depth N", [21] = "getsrc N",
    [22] = "getdst N", [23] = "getrb N", [24] = "getep N", [25] = "getport N", [26] = "here N",
    [27] = "ishere N", [28] = "getifc N", [29] = "nifc N", [30] = "getlen N", [31] = "add N",
    [32] = "addi I", [33] = "sub N", [34] = "subi I", [35] = "mul N", [36] = "muli I",
    [37] = "div N", [38] = "divi I", [39] = "mod N", [40] = "modi I", [41] = "neg N",
    [42] = "and N", [43] = "andi I", [44] = "or N", [45] = "ori I", [46] = "xor N",
    [47] = "xori I", [48] = "not N", [49] = "lnot N", [50] = "lsl N", [51] = "lsli I",
    [52] = "lsr N", [53] = "lsri I", [54] = "asr N", [55] = "asri I", [56] = "eq N",
    [57] = "eqi I", [58] = "neq N", [59] = "neqi I", [60] = "lt N", [61] = "lti I",
    [62] = "le N", [63] = "lei I", [64] = "gt N", [65] = "gti I", [66] = "ge N", [67] = "gei I",
    [68] = "fadd N", [69] = "fsub N", [70] = "fmul N", [71] = "fdiv N", [72] = "flt N",
    [73] = "feq N", [74] = "itof N", [75] = "ftoi N", [76] = "mkaddr N", [77] = "aeq N",
    [78] = "snet N", [79] = "insnet N", [80] = "towide N", [81] = "wadd N", [82] = "wsub N",
    [83] = "wmul N", [84] = "wlt N", [85] = "weq N", [86] = "narrow N", [87] = "mktup C",
    [88] = "nth C", [89] = "length N", [90] = "bget N", [91] = "istag T", [92] = "gettag N",
    [93] = "calls H", [94] = "min N", [95] = "max N", [96] = "abs N", [97] = "dup N",
}
local errcode_names = {
    [0] = "none", [1] = "store-full", [2] = "missing-state", [3] = "malformed",
    [4] = "code-4", [5] = "code-5", [6] = "code-6", [7] = "code-7",
}
local cmp_names = { [0] = "lt", [1] = "le", [2] = "gt", [3] = "ge", [4] = "eq", [5] = "ne" }
local combine_names = { [0] = "add", [1] = "min", [2] = "max", [3] = "and", [4] = "or", [5] = "xor" }
local param_names = {
    [0] = "node-id", [1] = "iface", [2] = "iface-load", [3] = "queue-len", [4] = "timestamp",
}
local carrier_names = { [1] = "dedicated", [2] = "IPv4 option 158", [3] = "IPv6 hop-by-hop option 0x3E" }

local f = {
    version = ProtoField.uint8("esp.version", "Version", base.DEC, nil, 0xF0),
    loc = ProtoField.uint8("esp.loc", "Loc", base.DEC, nil, 0x0E),
    loc_input = ProtoField.bool("esp.loc.input", "Input (I)", 8, nil, 0x08),
    loc_output = ProtoField.bool("esp.loc.output", "Output (O)", 8, nil, 0x04),
    loc_central = ProtoField.bool("esp.loc.central", "Central (C)", 8, nil, 0x02),
    err = ProtoField.bool("esp.err", "Err", 8, nil, 0x01),
    rb = ProtoField.bool("esp.rb", "Reflector bit (RB)", 8, nil, 0x80),
    errcode = ProtoField.uint8("esp.errcode", "Error code", base.DEC, errcode_names, 0x70),
    reserved = ProtoField.uint8("esp.reserved", "Reserved", base.HEX, nil, 0x0F),
    opcode = ProtoField.uint8("esp.opcode", "Opcode", base.DEC, opcode_names),
    operand_len = ProtoField.uint8("esp.operand_len", "Operand length", base.DEC),
    cid = ProtoField.uint32("esp.cid", "Computation ID", base.HEX),
    carrier = ProtoField.uint8("esp.carrier", "Carried as", base.DEC, carrier_names),
    tag = ProtoField.uint64("esp.tag", "Tag", base.HEX),
    value = ProtoField.uint64("esp.value", "Value", base.DEC),
    thresh = ProtoField.uint64("esp.thresh", "Threshold", base.DEC),
    cmp = ProtoField.uint8("esp.cmp", "Compare operator", base.DEC, cmp_names),
    combine = ProtoField.uint8("esp.combine", "Combine operator", base.DEC, combine_names),
    param = ProtoField.uint8("esp.param", "Parameter", base.DEC, param_names),
    limit = ProtoField.uint16("esp.limit", "Forwarding limit", base.DEC),
    k = ProtoField.uint8("esp.k", "IDmap k", base.DEC),
    words = ProtoField.uint8("esp.words", "IDmap words (w)", base.DEC),
    idmap = ProtoField.uint64("esp.idmap", "IDmap word", base.HEX),
    operand = ProtoField.uint64("esp.operand", "Operand", base.DEC),
    micro_code = ProtoField.uint8("esp.micro.code_words", "Code words", base.DEC),
    micro_heap_len = ProtoField.uint8("esp.micro.heap_words", "Heap words", base.DEC),
    micro_entry = ProtoField.uint8("esp.micro.entry", "Entry point", base.DEC),
    micro_insn = ProtoField.string("esp.micro.insn", "Instruction"),
    micro_word = ProtoField.uint32("esp.micro.word", "Instruction word", base.HEX),
    micro_heap = ProtoField.uint32("esp.micro.heap", "Heap word", base.HEX),
    payload = ProtoField.bytes("esp.payload", "Payload"),
}
p_esp.fields = {
    f.version, f.loc, f.loc_input, f.loc_output, f.loc_central, f.err, f.rb, f.errcode,
    f.reserved, f.opcode, f.operand_len, f.cid, f.carrier, f.tag, f.value, f.thresh, f.cmp,
    f.combine, f.param, f.limit, f.k, f.words, f.idmap, f.payload, f.operand, f.micro_code,
    f.micro_heap_len, f.micro_entry, f.micro_insn, f.micro_word, f.micro_heap,
}

local ex = {
    malformed = ProtoExpert.new("esp.malformed", "Malformed ESP instruction",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_opcode = ProtoExpert.new("esp.unknown_opcode", "Unknown ESP opcode",
        expert.group.UNDECODED, expert.severity.WARN),
    bad_operator = ProtoExpert.new("esp.bad_operator", "Unknown ESP operator or parameter",
        expert.group.MALFORMED, expert.severity.ERROR),
    aborted = ProtoExpert.new("esp.aborted", "ESP computation aborted (Err set)",
        expert.group.RESPONSE_CODE, expert.severity.NOTE),
}
p_esp.experts = { ex.malformed, ex.unknown_opcode, ex.bad_operator, ex.aborted }

-- Operand layouts, in wire order: { kind, name shown in the info line and tree, label }.
-- Kinds: tag/value/thresh (8 bytes), limit (2), cmp/combine/param/k/words (1), idmap (8w).
local T = function(name, label) return { "tag", name, label } end
local V = function(name, label) return { "value", name, label } end
local layouts = {
    [1] = { T("counter", "counter C"), { "thresh", "thresh" } },
    [2] = { T("value", "stored value V"), V("current", "current"), { "cmp", "op" } },
    [3] = { T("value", "result V"), V("val", "val"), T("counter", "child count C"), { "combine", "op" } },
    [4] = { T("children", "children filter T0"), T("counter", "counter C"), { "limit", "thresh" },
        { "k", "k" }, { "words", "w" }, { "idmap" } },
    [5] = { T("value", "result V"), V("val", "val"), T("heard", "heard filter T1"),
        T("children", "children filter T0"), T("forwarded", "forwarded count D"), { "limit", "thresh" },
        { "combine", "op" }, { "k", "k" }, { "words", "w" }, { "idmap" } },
    [6] = { T("tag"), V("value") },
    [7] = { T("tag"), V("value") },
    [8] = { T("tag"), V("value"), { "combine", "op" } },
    [9] = { T("tag") },
    [10] = { T("tag"), V("node", "last marked node") },
    [11] = { T("tag") },
    [12] = { { "param", "param" }, { "combine", "op" }, V("value") },
    [13] = { T("tag"), { "param", "param" } },
    [14] = { T("tag"), V("value"), { "cmp", "op" } },
    [15] = { T("tag") },
    [16] = { T("tag") },
    [17] = { T("tag"), V("expect", "expected / found"), V("new", "new") },
}
-- The order esp-proto's Display prints operands in, where it differs from the wire order.
local display_order = {
    [5] = { "value", "val", "heard", "children", "forwarded", "op", "thresh", "k", "w" },
}
local kind_len = { tag = 8, value = 8, thresh = 8, limit = 2, cmp = 1, combine = 1, param = 1, k = 1, words = 1 }
local byte_names = { cmp = cmp_names, combine = combine_names, param = param_names }

-- 0x-prefixed lower-case hex without leading zeros, as Rust's {:#x}.
local function hex64(u)
    local h = u:tohex():lower():gsub("^0+", "")
    if h == "" then h = "0" end
    return "0x" .. h
end

-- A SNAP instruction word as snap_vm::asm::instruction prints it.
local function snap_insn(w)
    local code = bit32.rshift(w, 25)
    local uimm = bit32.band(w, 0x1FFFFFF)
    local o = snap_ops[code]
    if not o then return string.format(".inst 0x%08x", w) end
    local name, kind = o:match("^(%S+) (%S)$")
    if kind == "N" and uimm == 0 then return name end
    if (kind == "I" or kind == "B") and uimm >= 0x1000000 then uimm = uimm - 0x2000000 end
    return name .. " " .. uimm
end

-- Adds the `count` 64-bit operands at `at` to `tree`; returns their text ("7,2").
local function add_operands(tvb, at, count, tree)
    local shown = {}
    for i = 0, count - 1 do
        local r = tvb(at + 8 * i, 8)
        tree:add(f.operand, r):append_text(" (operand " .. i .. ")")
        shown[#shown + 1] = tostring(r:uint64())
    end
    return table.concat(shown, ",")
end

-- Operands that must be whole 64-bit words, at most `max` (nil: no limit); their text or nil.
local function dissect_words(what, tvb, at, n, max, tree)
    if n % 8 ~= 0 then
        tree:add_proto_expert_info(ex.malformed, string.format(
            "%s: %d operand bytes are not whole 64-bit operands", what, n))
        return nil
    end
    if max and n / 8 > max then
        tree:add_proto_expert_info(ex.malformed, string.format(
            "%s: %d operands, at most %d", what, n / 8, max))
        return nil
    end
    return add_operands(tvb, at, n / 8, tree)
end

-- Inline microcode (opcode 32): prefix, code, heap, operands. Text or nil if malformed.
local function dissect_micro(tvb, base, n, tree)
    if n < 3 then
        tree:add_proto_expert_info(ex.malformed, string.format(
            "Inline microcode truncated: %d of 3 prefix bytes", n))
        return nil
    end
    local c, h, entry = tvb(base, 1):uint(), tvb(base + 1, 1):uint(), tvb(base + 2, 1):uint()
    tree:add(f.micro_code, tvb(base, 1))
    tree:add(f.micro_heap_len, tvb(base + 1, 1))
    local ei = tree:add(f.micro_entry, tvb(base + 2, 1))
    local need = 3 + 4 * (c + h)
    if need > n then
        tree:add_proto_expert_info(ex.malformed, string.format(
            "Inline microcode of %d code and %d heap words needs %d bytes, the field has %d",
            c, h, need, n))
        return nil
    end
    if entry >= c then
        ei:add_proto_expert_info(ex.malformed, string.format(
            "Entry point %d outside the code (%d words)", entry, c))
    end
    if c > 0 then
        local code = tree:add(tvb(base + 3, 4 * c), string.format("Code: %d words", c))
        for i = 0, c - 1 do
            local r = tvb(base + 3 + 4 * i, 4)
            local text = snap_insn(r:uint())
            local it = code:add(f.micro_insn, r, text)
            it:set_text(string.format("%d: %s%s", i, text, i == entry and "  <- entry" or ""))
            it:add(f.micro_word, r)
        end
    end
    if h > 0 then
        local heap = tree:add(tvb(base + 3 + 4 * c, 4 * h), string.format("Heap: %d words", h))
        for i = 0, h - 1 do
            heap:add(f.micro_heap, tvb(base + 3 + 4 * (c + i), 4)):append_text(" (word " .. i .. ")")
        end
    end
    local ops = dissect_words("Inline microcode", tvb, base + need, n - need, MICRO_MAX_OPERANDS, tree)
    if ops == nil then return nil end
    return string.format(" code=%d heap=%d entry=%d operands=%s", c, h, entry, ops)
end

-- Decodes the operands of `opcode`, the `n` bytes of `tvb` at `base`, into `tree`; returns
-- the text after the mnemonic (e.g. " counter=0x5 thresh=10"), or nil if they are cut short.
local function dissect_operands(opcode, tvb, base, n, pinfo, tree)
    if opcode == OP_MICRO then return dissect_micro(tvb, base, n, tree) end
    if opcode >= INSTALLED_FIRST and opcode <= INSTALLED_LAST then
        local ops = dissect_words(opcode_names[opcode], tvb, base, n, MICRO_MAX_OPERANDS, tree)
        if ops == nil then return nil end
        return " operands=" .. ops
    end
    local layout = layouts[opcode]
    if not layout then
        if n > 0 then tree:add(f.payload, tvb(base, n)):set_text("Operands (opcode unknown): " .. n .. " bytes") end
        return ""
    end
    local shown = {}
    local off = 0
    local words = nil
    for _, op in ipairs(layout) do
        local kind, name, label = op[1], op[2], op[3]
        if kind == "idmap" then
            local w = words or 0
            for i = 1, w do
                if off + 8 > n then break end
                tree:add(f.idmap, tvb(base + off, 8)):append_text(" (word " .. (i - 1) .. ")")
                off = off + 8
            end
        else
            local len = kind_len[kind]
            if off + len > n then
                tree:add_proto_expert_info(ex.malformed, string.format(
                    "%s operands truncated: %d bytes, %s needs more", opcode_names[opcode], n, name))
                return nil
            end
            local r = tvb(base + off, len)
            local item
            if kind == "tag" then
                item = tree:add(f.tag, r)
                shown[name] = hex64(r:uint64())
            elseif kind == "value" then
                item = tree:add(f.value, r)
                shown[name] = tostring(r:uint64())
            elseif kind == "thresh" then
                item = tree:add(f.thresh, r)
                shown[name] = tostring(r:uint64())
            elseif kind == "limit" then
                item = tree:add(f.limit, r)
                shown[name] = tostring(r:uint())
            elseif kind == "k" or kind == "words" then
                item = tree:add(f[kind], r)
                shown[name] = tostring(r:uint())
                if kind == "words" then words = r:uint() end
            else
                local b = r:uint()
                item = tree:add(f[kind], r)
                local nm = byte_names[kind][b]
                if nm then
                    shown[name] = nm
                else
                    shown[name] = "?" .. b
                    item:add_proto_expert_info(ex.bad_operator,
                        string.format("Unknown %s byte %d", kind, b))
                end
            end
            if label and label ~= name then item:append_text(" (" .. label .. ")") end
            off = off + len
        end
    end
    if words ~= nil and (words == 0 or words > 8) then
        tree:add_proto_expert_info(ex.malformed, "IDmap word count " .. words .. " outside 1..8")
    end
    if off ~= n then
        tree:add_proto_expert_info(ex.malformed, string.format(
            "%s takes %d operand bytes, got %d", opcode_names[opcode], off, n))
    end
    local order = display_order[opcode]
    if not order then
        order = {}
        for _, op in ipairs(layout) do
            if op[2] then order[#order + 1] = op[2] end
        end
    end
    local parts = {}
    for _, name in ipairs(order) do
        if shown[name] then parts[#parts + 1] = " " .. name .. "=" .. shown[name] end
    end
    return table.concat(parts)
end

-- Dissects one instruction at offset `base` of `tvb`, with `n` bytes available to it, under
-- `parent`; returns the bytes it used and the summary text ("COUNT counter=…").
local function dissect_instruction(tvb, base, n, pinfo, parent, carrier)
    local tree = parent:add(p_esp, tvb(base, math.min(n, HEADER_LEN + (n >= 4 and tvb(base + 3, 1):uint() or 0))))
    tree:add(f.carrier, carrier):set_generated()
    if n < HEADER_LEN then
        tree:add_proto_expert_info(ex.malformed,
            string.format("ESP header truncated: %d of %d bytes", n, HEADER_LEN))
        tree:append_text(", truncated")
        return n, "truncated instruction"
    end
    local b0, b1 = tvb(base, 1), tvb(base + 1, 1)
    local version = bit32.rshift(b0:uint(), 4)
    local vi = tree:add(f.version, b0)
    if version ~= VERSION then
        vi:add_proto_expert_info(ex.malformed,
            string.format("ESP version %d, expected %d", version, VERSION))
    end
    local li = tree:add(f.loc, b0)
    li:add(f.loc_input, b0)
    li:add(f.loc_central, b0)
    li:add(f.loc_output, b0)
    local loc = bit32.band(bit32.rshift(b0:uint(), 1), 7)
    local names = {}
    if bit32.band(loc, 4) ~= 0 then names[#names + 1] = "input" end
    if bit32.band(loc, 1) ~= 0 then names[#names + 1] = "central" end
    if bit32.band(loc, 2) ~= 0 then names[#names + 1] = "output" end
    li:append_text(" (" .. (#names > 0 and table.concat(names, ",") or "none") .. ")")
    local err = bit32.band(b0:uint(), 1) ~= 0
    local ei = tree:add(f.err, b0)
    local rb = bit32.band(b1:uint(), 0x80) ~= 0
    tree:add(f.rb, b1)
    local code = bit32.band(bit32.rshift(b1:uint(), 4), 7)
    tree:add(f.errcode, b1)
    tree:add(f.reserved, b1)
    local opcode = tvb(base + 2, 1):uint()
    local oi = tree:add(f.opcode, tvb(base + 2, 1))
    local declared = tvb(base + 3, 1):uint()
    local di = tree:add(f.operand_len, tvb(base + 3, 1))
    local cid = tvb(base + 4, 4):uint()
    tree:add(f.cid, tvb(base + 4, 4))
    local name = opcode_names[opcode] or ("opcode-" .. opcode)
    if not opcode_names[opcode] then
        oi:add_proto_expert_info(ex.unknown_opcode, "Unknown ESP opcode " .. opcode)
    end
    tree:append_text(string.format(", %s, CID 0x%x", name, cid))
    if carrier ~= 1 then tree:append_text(" (" .. carrier_names[carrier] .. ")") end
    if err then
        ei:add_proto_expert_info(ex.aborted,
            "Computation aborted at a router: " .. errcode_names[code])
    end
    local flags = ""
    if err then flags = flags .. " [Err " .. errcode_names[code] .. "]" end
    if rb then flags = flags .. " [RB]" end
    if HEADER_LEN + declared > n then
        di:add_proto_expert_info(ex.malformed, string.format(
            "ESP operand length %d but %d bytes follow the header", declared, n - HEADER_LEN))
        tree:append_text(", truncated")
        return n, name .. " truncated" .. flags
    end
    local text = dissect_operands(opcode, tvb, base + HEADER_LEN, declared, pinfo, tree)
    if text == nil then return HEADER_LEN + declared, name .. " malformed" .. flags end
    return HEADER_LEN + declared, name .. text .. flags
end

-- Texts of piggybacked instructions, by frame number, for the postdissector's Info column.
local piggybacked = {}

local function note_piggyback(pinfo, text)
    local t = piggybacked[pinfo.number] or {}
    t[#t + 1] = text
    piggybacked[pinfo.number] = t
end

-- (a) Dedicated packets: the IP payload starts with the instruction.
function p_esp.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol = "ESP"
    local used, text = dissect_instruction(tvb, 0, tvb:len(), pinfo, tree, 1)
    pinfo.cols.info = "ESP " .. text
    if used < tvb:len() then
        Dissector.get("data"):call(tvb(used):tvb(), pinfo, tree)
    end
    return tvb:len()
end

-- (b) The IPv4 option: type 158, length, instruction. A protocol of its own (named
-- "WAIST_ESP_OPT" in the options summary) so each table entry has its own dissector.
local p_opt4 = Proto("waist_esp_opt", "ESP in IPv4 option 158")
function p_opt4.dissector(tvb, pinfo, tree)
    local n = tvb:len()
    if n < 2 then
        tree:add_proto_expert_info(ex.malformed, "IPv4 option 158 truncated")
        return n
    end
    local optlen = tvb(1, 1):uint()
    local avail = math.min(n, math.max(optlen, 2)) - 2
    local _, text = dissect_instruction(tvb, 2, avail, pinfo, tree, 2)
    note_piggyback(pinfo, text)
    return n
end

-- (c) The IPv6 hop-by-hop option, and the Info column of piggybacked packets.
local f_hopopts = Field.new("ipv6.hopopts")
local p_post = Proto("waist_esp_post", "ESP in IPv6 hop-by-hop options")

-- Walks one hop-by-hop header (`hbh`: next header, length, options) for option 0x3E.
local function walk_hbh(hbh, pinfo, tree)
    local n = hbh:len()
    local off = 2
    while off < n do
        local t = hbh(off, 1):uint()
        if t == 0 then -- Pad1
            off = off + 1
        else
            if off + 2 > n then break end
            local len = hbh(off + 1, 1):uint()
            if t == IPV6_HBH_OPTION then
                local avail = math.min(len, n - off - 2)
                local _, text = dissect_instruction(hbh, off + 2, avail, pinfo, tree, 3)
                if avail < len then
                    tree:add_proto_expert_info(ex.malformed, string.format(
                        "Hop-by-hop option 0x3E declares %d bytes, %d present", len, avail))
                end
                note_piggyback(pinfo, text)
            end
            off = off + 2 + len
        end
    end
end

function p_post.dissector(tvb, pinfo, tree)
    for _, fi in ipairs({ f_hopopts() }) do
        local r = fi.range
        if r and r:len() >= 2 then walk_hbh(r:tvb(), pinfo, tree) end
    end
    local texts = piggybacked[pinfo.number]
    if texts then
        pinfo.cols.info:prepend("ESP " .. table.concat(texts, "; ESP ") .. ", ")
        if tostring(pinfo.cols.protocol) ~= "ESP" then
            pinfo.cols.protocol:prepend("ESP/")
        end
        piggybacked[pinfo.number] = nil
    end
end

local function init()
    piggybacked = {}
end
p_esp.init = init

DissectorTable.get("ip.proto"):add(IP_PROTOCOL, p_esp)
DissectorTable.get("ip.option"):add(IPV4_OPTION, p_opt4)
register_postdissector(p_post)
