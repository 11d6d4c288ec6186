# layoutd-csi as a Nomad node plugin, on every client that runs layoutd
# (client meta layoutd_agent = "true"). Nomad calls the plugin on the
# socket below mount_dir, and publishes volumes below
# stage_publish_base_dir, which --target-root names.
job "layoutd-csi" {
  datacenters = ["dc1"]
  type        = "system"

  constraint {
    attribute = "${meta.layoutd_agent}"
    value     = "true"
  }

  group "node" {
    task "plugin" {
      driver = "docker"

      config {
        image      = "registry.example.com/layoutd/layoutd-csi:0.1.0"
        privileged = true
        args = [
          "--endpoint=unix:///csi/csi.sock",
          "--node-id=${node.unique.name}",
          "--layoutd-socket=/run/layoutd/api.sock",
          "--target-root=/local/csi",
        ]

        # The read-write API socket's directory, and the workspaces' FUSE mounts.
        mount {
          type   = "bind"
          source = "/run/layoutd"
          target = "/run/layoutd"
        }
        mount {
          type   = "bind"
          source = "/var/lib/layoutd/workspaces"
          target = "/var/lib/layoutd/workspaces"
          bind_options {
            propagation = "rslave"
          }
        }
      }

      csi_plugin {
        id                     = "layoutd.io"
        type                   = "node"
        mount_dir              = "/csi"
        stage_publish_base_dir = "/local/csi"
      }

      resources {
        cpu    = 50
        memory = 64
      }
    }
  }
}
