# A layoutd workspace as a Nomad CSI volume: `nomad volume register` this
# file once. There is no controller, so nothing is made now; the workspace
# is made when an allocation's volume is published on a node, and removed
# with its data when the allocation stops.
id          = "agent-workspace"
name        = "agent-workspace"
type        = "csi"
plugin_id   = "layoutd.io"
external_id = "agent-workspace"

capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

context {
  tenant = "agents"
}
