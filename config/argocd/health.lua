-- Argo CD health check for payments.idempotency.dev/PaymentJob and
-- payments.idempotency.dev/PaymentRefund (one script under both keys).
-- Reads the kstatus conditions (Ready, Reconciling, Stalled) and
-- observedGeneration, with status.phase as the fallback. docs/gitops.md
-- embeds this script verbatim; keep the two identical.
local hs = {}

local function field(t, key)
  if type(t) ~= "table" then
    return nil
  end
  return t[key]
end

local function text(v)
  if v == nil then
    return ""
  end
  return tostring(v)
end

local function findCondition(conditions, condType)
  if type(conditions) ~= "table" then
    return nil
  end
  for _, c in ipairs(conditions) do
    if field(c, "type") == condType then
      return c
    end
  end
  return nil
end

local function isTrue(c)
  return field(c, "status") == "True"
end

local function explain(reason, message, fallback)
  if reason ~= nil and message ~= nil and message ~= "" then
    return text(reason) .. ": " .. text(message)
  end
  if reason ~= nil then
    return text(reason)
  end
  if message ~= nil and message ~= "" then
    return text(message)
  end
  return fallback
end

local refund = field(obj, "kind") == "PaymentRefund"
local moved = "The payment may have been charged"
if refund then
  moved = "The refund may have been made"
end

local status = field(obj, "status")
local phase = field(status, "phase")
local conditions = field(status, "conditions")
if phase == nil and conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator"
  return hs
end

local generation = field(field(obj, "metadata"), "generation")
local observed = field(status, "observedGeneration")
if type(generation) == "number" and type(observed) == "number" and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. text(generation)
  return hs
end

local ready = findCondition(conditions, "Ready")
local stalled = findCondition(conditions, "Stalled")
local reconciling = findCondition(conditions, "Reconciling")

if phase == "Failed" then
  local failure = field(status, "failure")
  hs.status = "Degraded"
  if failure ~= nil then
    hs.message = explain(field(failure, "reason"), field(failure, "message"), "Failed")
  else
    hs.message = explain(field(ready, "reason"), field(ready, "message"), "Failed")
  end
  return hs
end

if isTrue(stalled) then
  hs.status = "Degraded"
  local detail = explain(field(stalled, "reason"), field(stalled, "message"), "Stalled")
  if phase == "Processing" then
    if field(stalled, "reason") == "RequestChanged" then
      hs.message = moved .. "; its request changed, so it is not sent again. " ..
        "Needs attention (" .. detail .. ")"
    elseif field(stalled, "reason") == "SettlementOverdue" then
      hs.message = "The provider accepted it and has not settled it by its deadline; " ..
        "it is still read, never sent again. Needs attention (" .. detail .. ")"
    else
      hs.message = moved .. "; the outcome is uncertain and it is still being " ..
        "retried with the same idempotency key. Needs attention (" .. detail .. ")"
    end
  else
    hs.message = detail
  end
  return hs
end

if isTrue(ready) or phase == "Completed" then
  local response = field(status, "providerResponse")
  local spec = field(obj, "spec")
  local amount = field(response, "amount") or field(spec, "amount")
  local currency = field(response, "currency") or field(spec, "currency")
  local id = field(response, "id")
  local message = "Charged"
  local of = nil
  if refund then
    -- A refund's spec.amount is optional (the whole charge); status.charge
    -- is the charge it gives money back from.
    local charge = field(status, "charge")
    amount = field(response, "amount") or field(spec, "amount") or field(charge, "amount")
    currency = field(response, "currency") or field(charge, "currency")
    of = field(charge, "id")
    message = "Refunded"
  end
  if amount ~= nil then
    message = message .. " " .. text(amount)
  end
  if currency ~= nil then
    message = message .. " " .. text(currency)
  end
  if of ~= nil then
    message = message .. " of " .. text(of)
  end
  if id ~= nil then
    message = message .. " as " .. text(id)
  end
  if field(response, "replayed") == true then
    message = message .. " (replayed)"
  end
  hs.status = "Healthy"
  hs.message = message
  return hs
end

if field(ready, "reason") == "Suspended" and (phase == "Pending" or phase == nil) then
  hs.status = "Suspended"
  hs.message = explain(nil, field(ready, "message"), "Suspended")
  return hs
end

if phase == "Pending" or phase == "Processing" or isTrue(reconciling) then
  hs.status = "Progressing"
  hs.message = explain(nil, field(ready, "message"), text(phase or "Reconciling"))
  return hs
end

hs.status = "Unknown"
hs.message = "Unrecognised status (phase " .. text(phase) .. ")"
return hs
