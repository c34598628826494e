package scrape

import (
	"sync"

	"github.com/prometheus/prometheus/config"

	// Prometheus's config loader knows the *_sd_configs of the discovery packages linked into
	// the binary only; a job using another is refused. These are the ones a ScrapeConfig can
	// use, imported one by one rather than through discovery/install, which would also link
	// the mechanisms the API has no field for (Marathon, Triton, Uyuni, Vultr...).
	_ "github.com/prometheus/prometheus/discovery/aws"          // ec2, lightsail
	_ "github.com/prometheus/prometheus/discovery/azure"        // azure
	_ "github.com/prometheus/prometheus/discovery/consul"       // consul
	_ "github.com/prometheus/prometheus/discovery/digitalocean" // digitalocean
	_ "github.com/prometheus/prometheus/discovery/dns"          // dns
	_ "github.com/prometheus/prometheus/discovery/eureka"       // eureka
	_ "github.com/prometheus/prometheus/discovery/file"         // file
	_ "github.com/prometheus/prometheus/discovery/gce"          // gce
	_ "github.com/prometheus/prometheus/discovery/hetzner"      // hetzner
	_ "github.com/prometheus/prometheus/discovery/http"         // http
	_ "github.com/prometheus/prometheus/discovery/ionos"        // ionos
	_ "github.com/prometheus/prometheus/discovery/kubernetes"   // kubernetes
	_ "github.com/prometheus/prometheus/discovery/linode"       // linode
	_ "github.com/prometheus/prometheus/discovery/moby"         // docker, dockerswarm
	_ "github.com/prometheus/prometheus/discovery/nomad"        // nomad
	_ "github.com/prometheus/prometheus/discovery/openstack"    // openstack
	_ "github.com/prometheus/prometheus/discovery/ovhcloud"     // ovhcloud
	_ "github.com/prometheus/prometheus/discovery/puppetdb"     // puppetdb
	_ "github.com/prometheus/prometheus/discovery/scaleway"     // scaleway
	_ "github.com/prometheus/prometheus/discovery/xds"          // kuma
)

// prometheusSDNames are the service discovery mechanisms Prometheus v3 (the config package
// version in go.mod) registers, by the name in their `<name>_sd_configs` key.
var prometheusSDNames = []string{
	"aws", "azure", "consul", "digitalocean", "dns", "docker", "dockerswarm", "ec2", "ecs",
	"elasticache", "eureka", "file", "gce", "hetzner", "http", "ionos", "kubernetes", "kuma",
	"lightsail", "linode", "marathon", "msk", "nerve", "nomad", "oci", "openstack", "outscale",
	"ovhcloud", "puppetdb", "rds", "scaleway", "serverset", "stackit", "triton", "uyuni", "vultr",
}

// sdLinked says whether the config loader of this binary knows `<name>_sd_configs`, that is
// whether Prometheus's discovery package for it is linked in. Asking the loader keeps the answer
// right whatever another package of the binary links.
func sdLinked(name string) bool {
	linked, known := linkedSD()[name]
	if !known {
		return loaderKnowsSD(name)
	}
	return linked
}

var linkedSD = sync.OnceValue(func() map[string]bool {
	out := make(map[string]bool, len(prometheusSDNames))
	for _, name := range prometheusSDNames {
		out[name] = loaderKnowsSD(name)
	}
	return out
})

func loaderKnowsSD(name string) bool {
	_, err := config.Load("scrape_configs:\n- job_name: sd\n  "+name+"_sd_configs: []\n", discardLogger)
	return err == nil
}
