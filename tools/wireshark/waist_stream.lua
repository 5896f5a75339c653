-- waist_stream.lua: a Wireshark dissector for the stream handlers' two UDP protocols (the
-- waist workspace's `stream-handlers` crate; Gavrilovska et al., §3).
--
-- What it dissects:
--
--   * UDP port 7400, RUDP fragments (crates/stream-handlers/src/rudp.rs), a 24-byte header
--     (big-endian) and the fragment's bytes:
--
--        0 version (1)   1 kind (0 data, 1 ack)   2..4 stream   4..8 message id
--        8..12 sequence number   12..14 fragment index   14..16 fragment count
--       16..20 message length    20..22 fragment size    22..24 zero
--
--     The first fragment (index 0) of a message also shows the message's own header, the
--     one every generated message starts with (crates/stream-handlers/src/endpoint.rs):
--     seq u32 at 0, timestamp_ns u64 at 4 (ns since the epoch).
--
--   * UDP port 7401, control envelopes (crates/stream-handlers/src/envelope.rs):
--
--        0..2 magic "SH"   2 version 1   3 kind (0 control, 1 deploy, 2 reply)
--        4..6 stream       6..10 request id
--       10..  control: a control message (version 1, opcode, operands;
--                      crates/stream-handlers/src/control.rs)
--             deploy:  the spec, UTF-8 text
--             reply:   status (0 on-node, 1 on-host, 2 applied, 3 refused), UTF-8 detail
--
--     Control opcodes: 1 SetRate rate u32; 2 SetPredicate handler u16, predicate;
--     3 SetFanOut handler u16, n u16; 4 SetRoute handler u16, value u32, dest u16;
--     5 Select stream u16, handler u16; 6 Terminate stream u16; 7 SetDestPredicate
--     handler u16, dest u16, predicate. A predicate is 12 bytes: kind u8 (0 all, 1 eq,
--     2 lt, 3 ge, 4 range), offset u16, width u8 (1, 2 or 4), value u32, hi u32.
--
-- How it registers: DissectorTable "udp.port", 7400 and 7401 (either port of a datagram:
-- replies leave the node from 7401, fragments from 7400).
--
-- Protocol filter names: "waist_stream" (fragments) and "waist_stream_ctl" (envelopes).
-- Field prefix: "wstream." (wstream.version, .kind, .stream, .message, .seq, .index,
-- .count, .len, .size, .zero, .payload, .msg_seq, .timestamp_ns; wstream.magic,
-- .env_version, .env_kind, .id, .spec, .status, .detail; wstream.ctl.version, .opcode,
-- .handler, .dest, .rate, .n, .value, .target; wstream.pred.kind, .offset, .width,
-- .value, .hi; experts wstream.malformed, wstream.inconsistent, wstream.refused).
--
-- Install: copy this file into ~/.local/lib/wireshark/plugins/ (or run
-- `tshark -X lua_script:tools/wireshark/waist_stream.lua ...`). Lua 5.2, Wireshark 4.0
-- API, no external modules. Lengths are checked before every read: a truncated or
-- inconsistent field is an expert item, never a Lua error.

local DATA_PORT = 7400
local CONTROL_PORT = 7401
local RUDP_HEADER = 24
local ENVELOPE_HEADER = 10

local p_data = Proto("waist_stream", "Stream handlers RUDP fragment")
local p_ctl = Proto("waist_stream_ctl", "Stream handlers control envelope")

local kind_names = { [0] = "data", [1] = "ack" }
local env_kind_names = { [0] = "control", [1] = "deploy", [2] = "reply" }
local status_names = { [0] = "on-node", [1] = "on-host", [2] = "applied", [3] = "refused" }
local opcode_names = {
    [1] = "SetRate", [2] = "SetPredicate", [3] = "SetFanOut", [4] = "SetRoute",
    [5] = "Select", [6] = "Terminate", [7] = "SetDestPredicate",
}
local pred_names = { [0] = "all", [1] = "eq", [2] = "lt", [3] = "ge", [4] = "range" }
local pred_ops = { [1] = "==", [2] = "<", [3] = ">=" }

local f = {
    version = ProtoField.uint8("wstream.version", "Version", base.DEC),
    kind = ProtoField.uint8("wstream.kind", "Kind", base.DEC, kind_names),
    stream = ProtoField.uint16("wstream.stream", "Stream", base.DEC),
    message = ProtoField.uint32("wstream.message", "Message id", base.DEC),
    seq = ProtoField.uint32("wstream.seq", "Sequence number", base.DEC),
    index = ProtoField.uint16("wstream.index", "Fragment index", base.DEC),
    count = ProtoField.uint16("wstream.count", "Fragment count", base.DEC),
    len = ProtoField.uint32("wstream.len", "Message length", base.DEC),
    size = ProtoField.uint16("wstream.size", "Fragment size", base.DEC),
    zero = ProtoField.uint16("wstream.zero", "Reserved (zero)", base.HEX),
    payload = ProtoField.bytes("wstream.payload", "Fragment bytes"),
    msg_seq = ProtoField.uint32("wstream.msg_seq", "Message seq field", base.DEC),
    timestamp = ProtoField.uint64("wstream.timestamp_ns", "Message timestamp (ns since the epoch)", base.DEC),
    magic = ProtoField.string("wstream.magic", "Magic"),
    env_version = ProtoField.uint8("wstream.env_version", "Envelope version", base.DEC),
    env_kind = ProtoField.uint8("wstream.env_kind", "Envelope kind", base.DEC, env_kind_names),
    id = ProtoField.uint32("wstream.id", "Request id", base.HEX),
    spec = ProtoField.string("wstream.spec", "Spec"),
    status = ProtoField.uint8("wstream.status", "Status", base.DEC, status_names),
    detail = ProtoField.string("wstream.detail", "Detail"),
    ctl_version = ProtoField.uint8("wstream.ctl.version", "Control version", base.DEC),
    opcode = ProtoField.uint8("wstream.ctl.opcode", "Opcode", base.DEC, opcode_names),
    handler = ProtoField.uint16("wstream.ctl.handler", "Handler", base.DEC),
    dest = ProtoField.uint16("wstream.ctl.dest", "Destination", base.DEC),
    rate = ProtoField.uint32("wstream.ctl.rate", "Rate (packets/s)", base.DEC),
    n = ProtoField.uint16("wstream.ctl.n", "Fan-out", base.DEC),
    value = ProtoField.uint32("wstream.ctl.value", "Route value", base.DEC),
    target = ProtoField.uint16("wstream.ctl.target", "Stream operand", base.DEC),
    pred_kind = ProtoField.uint8("wstream.pred.kind", "Predicate", base.DEC, pred_names),
    pred_offset = ProtoField.uint16("wstream.pred.offset", "Field offset", base.DEC),
    pred_width = ProtoField.uint8("wstream.pred.width", "Field width", base.DEC),
    pred_value = ProtoField.uint32("wstream.pred.value", "Value", base.DEC),
    pred_hi = ProtoField.uint32("wstream.pred.hi", "Range high", base.DEC),
}
local all = {}
for _, v in pairs(f) do all[#all + 1] = v end
p_data.fields = all

local ex = {
    malformed = ProtoExpert.new("wstream.malformed", "Malformed stream datagram",
        expert.group.MALFORMED, expert.severity.ERROR),
    inconsistent = ProtoExpert.new("wstream.inconsistent", "Inconsistent RUDP fragment",
        expert.group.MALFORMED, expert.severity.ERROR),
    refused = ProtoExpert.new("wstream.refused", "Request refused by the stream node",
        expert.group.RESPONSE_CODE, expert.severity.NOTE),
}
p_data.experts = { ex.malformed, ex.inconsistent, ex.refused }

-- The fragment's span in its message, as Header::span checks it; nil and why if the
-- header disagrees with itself.
local function span(index, count, len, size)
    if size == 0 then return nil, "fragment size 0" end
    if count == 0 then return nil, "fragment count 0" end
    if index >= count then return nil, string.format("index %d not below count %d", index, count) end
    local want = math.max(math.ceil(len / size), 1)
    if count ~= want then
        return nil, string.format("count %d, but a %d-byte message in %d-byte fragments has %d",
            count, len, size, want)
    end
    local start = index * size
    return start, math.min(start + size, len)
end

function p_data.dissector(tvb, pinfo, tree)
    local n = tvb:len()
    pinfo.cols.protocol = "WSTREAM"
    local t = tree:add(p_data, tvb())
    if n < RUDP_HEADER then
        t:add_proto_expert_info(ex.malformed,
            string.format("RUDP header truncated: %d of %d bytes", n, RUDP_HEADER))
        pinfo.cols.info = "RUDP truncated"
        return n
    end
    local vi = t:add(f.version, tvb(0, 1))
    if tvb(0, 1):uint() ~= 1 then
        vi:add_proto_expert_info(ex.malformed, "RUDP version " .. tvb(0, 1):uint() .. ", expected 1")
    end
    local kind = tvb(1, 1):uint()
    local ki = t:add(f.kind, tvb(1, 1))
    if not kind_names[kind] then ki:add_proto_expert_info(ex.malformed, "Unknown RUDP kind " .. kind) end
    local stream, message, seq = tvb(2, 2):uint(), tvb(4, 4):uint(), tvb(8, 4):uint()
    local index, count = tvb(12, 2):uint(), tvb(14, 2):uint()
    local len, size = tvb(16, 4):uint(), tvb(20, 2):uint()
    t:add(f.stream, tvb(2, 2))
    t:add(f.message, tvb(4, 4))
    t:add(f.seq, tvb(8, 4))
    t:add(f.index, tvb(12, 2))
    local ci = t:add(f.count, tvb(14, 2))
    t:add(f.len, tvb(16, 4))
    t:add(f.size, tvb(20, 2))
    local zi = t:add(f.zero, tvb(22, 2))
    if tvb(22, 2):uint() ~= 0 then zi:add_proto_expert_info(ex.malformed, "Reserved bytes are not zero") end
    local body = n - RUDP_HEADER
    if body > 0 then t:add(f.payload, tvb(RUDP_HEADER, body)) end
    local info = string.format("stream %d message %d fragment %d/%d seq %d", stream, message,
        index, count, seq)
    t:append_text(", " .. info)
    if kind == 0 then
        local start, stop = span(index, count, len, size)
        if not start then
            ci:add_proto_expert_info(ex.inconsistent, stop)
        elseif body ~= stop - start then
            t:add_proto_expert_info(ex.inconsistent, string.format(
                "fragment %d of a %d-byte message carries %d bytes, %d expected",
                index, len, body, stop - start))
        end
        if index == 0 then
            if body >= 4 then t:add(f.msg_seq, tvb(RUDP_HEADER, 4)) end
            if body >= 12 then
                t:add(f.timestamp, tvb(RUDP_HEADER + 4, 8))
                info = info .. string.format(" (msg seq %d)", tvb(RUDP_HEADER, 4):uint())
            end
        end
    else
        info = "ack " .. info
    end
    pinfo.cols.info = "RUDP " .. info
    return n
end

-- One predicate (12 bytes at `off` of `tvb`, `n` bytes there) into `tree`; its text.
local function predicate(tvb, off, n, tree)
    if n < 12 then
        tree:add_proto_expert_info(ex.malformed, string.format("predicate truncated: %d of 12 bytes", n))
        return "?"
    end
    local kind, offset, width = tvb(off, 1):uint(), tvb(off + 1, 2):uint(), tvb(off + 3, 1):uint()
    local value, hi = tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint()
    local pt = tree:add(f.pred_kind, tvb(off, 1))
    tree:add(f.pred_offset, tvb(off + 1, 2))
    local wi = tree:add(f.pred_width, tvb(off + 3, 1))
    tree:add(f.pred_value, tvb(off + 4, 4))
    tree:add(f.pred_hi, tvb(off + 8, 4))
    if width ~= 1 and width ~= 2 and width ~= 4 then
        wi:add_proto_expert_info(ex.malformed, "field width " .. width .. " is not 1, 2 or 4")
    end
    if not pred_names[kind] then
        pt:add_proto_expert_info(ex.malformed, "unknown predicate kind " .. kind)
        return "?"
    end
    local field = string.format("u%d@%d", width * 8, offset)
    if kind == 0 then return "all" end
    if kind == 4 then return string.format("%s in %d..%d", field, value, hi) end
    return field .. pred_ops[kind] .. value
end

-- Operand layouts: { field key, bytes } in order; "pred" is a 12-byte predicate.
local layouts = {
    [1] = { { "rate", 4 } },
    [2] = { { "handler", 2 }, { "pred", 12 } },
    [3] = { { "handler", 2 }, { "n", 2 } },
    [4] = { { "handler", 2 }, { "value", 4 }, { "dest", 2 } },
    [5] = { { "target", 2 }, { "handler", 2 } },
    [6] = { { "target", 2 } },
    [7] = { { "handler", 2 }, { "dest", 2 }, { "pred", 12 } },
}

local function control(tvb, off, tree)
    local n = tvb:len() - off
    if n < 2 then
        tree:add_proto_expert_info(ex.malformed, "control message truncated")
        return "control (truncated)"
    end
    local vi = tree:add(f.ctl_version, tvb(off, 1))
    if tvb(off, 1):uint() ~= 1 then
        vi:add_proto_expert_info(ex.malformed, "control version " .. tvb(off, 1):uint() .. ", expected 1")
    end
    local op = tvb(off + 1, 1):uint()
    local oi = tree:add(f.opcode, tvb(off + 1, 1))
    local layout = layouts[op]
    if not layout then
        oi:add_proto_expert_info(ex.malformed, "unknown control opcode " .. op)
        return "opcode " .. op
    end
    local parts = { opcode_names[op] }
    local at = off + 2
    for _, o in ipairs(layout) do
        local key, len = o[1], o[2]
        local left = tvb:len() - at
        if key == "pred" then
            parts[#parts + 1] = predicate(tvb, at, left, tree)
        elseif left < len then
            tree:add_proto_expert_info(ex.malformed, string.format(
                "%s truncated at %s", opcode_names[op], key))
            return table.concat(parts, " ")
        else
            tree:add(f[key], tvb(at, len))
            parts[#parts + 1] = key .. "=" .. tvb(at, len):uint()
        end
        at = at + len
    end
    if at < tvb:len() then
        tree:add_proto_expert_info(ex.malformed, string.format(
            "%d bytes after the control message", tvb:len() - at))
    end
    return table.concat(parts, " ")
end

function p_ctl.dissector(tvb, pinfo, tree)
    local n = tvb:len()
    pinfo.cols.protocol = "WSTREAM"
    local t = tree:add(p_ctl, tvb())
    if n < ENVELOPE_HEADER then
        t:add_proto_expert_info(ex.malformed,
            string.format("envelope header truncated: %d of %d bytes", n, ENVELOPE_HEADER))
        pinfo.cols.info = "stream control (truncated)"
        return n
    end
    local mi = t:add(f.magic, tvb(0, 2))
    if tvb(0, 2):string() ~= "SH" then mi:add_proto_expert_info(ex.malformed, "magic is not \"SH\"") end
    local vi = t:add(f.env_version, tvb(2, 1))
    if tvb(2, 1):uint() ~= 1 then
        vi:add_proto_expert_info(ex.malformed, "envelope version " .. tvb(2, 1):uint() .. ", expected 1")
    end
    local kind = tvb(3, 1):uint()
    local ki = t:add(f.env_kind, tvb(3, 1))
    local stream = tvb(4, 2):uint()
    t:add(f.stream, tvb(4, 2))
    t:add(f.id, tvb(6, 4))
    local body = n - ENVELOPE_HEADER
    local text
    if kind == 0 then
        text = control(tvb, ENVELOPE_HEADER, t)
    elseif kind == 1 then
        if body > 0 then t:add(f.spec, tvb(ENVELOPE_HEADER, body)) end
        if body > 4096 then t:add_proto_expert_info(ex.malformed, "spec longer than 4096 bytes") end
        text = "deploy " .. (body > 0 and tvb(ENVELOPE_HEADER, body):string() or "")
    elseif kind == 2 then
        if body < 1 then
            t:add_proto_expert_info(ex.malformed, "reply without its status")
            text = "reply (truncated)"
        else
            local s = tvb(ENVELOPE_HEADER, 1):uint()
            local si = t:add(f.status, tvb(ENVELOPE_HEADER, 1))
            text = "reply " .. (status_names[s] or ("status " .. s))
            if not status_names[s] then si:add_proto_expert_info(ex.malformed, "unknown status " .. s) end
            if s == 3 then si:add_proto_expert_info(ex.refused) end
            if body > 1 then
                t:add(f.detail, tvb(ENVELOPE_HEADER + 1, body - 1))
                text = text .. " (" .. tvb(ENVELOPE_HEADER + 1, body - 1):string() .. ")"
            end
        end
    else
        ki:add_proto_expert_info(ex.malformed, "unknown envelope kind " .. kind)
        text = "kind " .. kind
    end
    local info = string.format("stream %d id 0x%08x: %s", stream, tvb(6, 4):uint(), text)
    t:append_text(", " .. info)
    pinfo.cols.info = "Stream control " .. info
    return n
end

local udp = DissectorTable.get("udp.port")
udp:add(DATA_PORT, p_data)
udp:add(CONTROL_PORT, p_ctl)
