# A job that gets its workspace from layoutd-csi: the volume registered
# from layoutd-nomad-csi-volume.hcl, mounted at /workspace.
job "coding-agent" {
  datacenters = ["dc1"]

  group "agent" {
    count = 1

    volume "workspace" {
      type            = "csi"
      source          = "agent-workspace"
      access_mode     = "single-node-writer"
      attachment_mode = "file-system"
    }

    task "agent" {
      driver = "docker"

      config {
        image = "registry.example.com/coding-agent:1"
      }

      volume_mount {
        volume      = "workspace"
        destination = "/workspace"
      }
    }
  }
}
