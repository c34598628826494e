package scrape

import (
	"strings"

	monitoringv1alpha1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1alpha1"
)

// Discovery of a cloud's virtual machines: Azure, GCE and OpenStack.

// azureSDConfig is one azure_sd_configs entry.
type azureSDConfig struct {
	Environment          string   `yaml:"environment,omitempty"`
	AuthenticationMethod string   `yaml:"authentication_method,omitempty"`
	SubscriptionID       string   `yaml:"subscription_id"`
	TenantID             string   `yaml:"tenant_id,omitempty"`
	ClientID             string   `yaml:"client_id,omitempty"`
	ClientSecret         string   `yaml:"client_secret,omitempty"`
	ResourceGroup        string   `yaml:"resource_group,omitempty"`
	Shared               sdShared `yaml:",inline"`
}

// azure renders one Azure discovery config. As with the existing operator, the SDK
// authentication method needs v2.52 and a resource group v2.35; the workload identity method,
// which Prometheus added in v3.11, is checked the same way.
func (s *sdContext) azure(field string, c *monitoringv1alpha1.AzureSDConfig) (azureSDConfig, *rejection) {
	if c.SubscriptionID == "" {
		return azureSDConfig{}, reject(ReasonInvalidConfig, "%s.subscriptionID: the subscription is required", field)
	}
	method := deref(c.AuthenticationMethod)
	for _, n := range []struct {
		name string
		v    sdVersion
		set  bool
	}{
		{"authenticationMethod: SDK", sdVersion{2, 52, 0}, method == string(monitoringv1alpha1.AuthMethodTypeSDK)},
		{"authenticationMethod: WorkloadIdentity", sdVersion{3, 11, 0}, method == string(monitoringv1alpha1.AuthMethodTypeWorkloadIdentity)},
		{"resourceGroup", sdVersion{2, 35, 0}, c.ResourceGroup != nil},
	} {
		if rej := s.need(field+"."+n.name, n.v, n.set); rej != nil {
			return azureSDConfig{}, rej
		}
	}
	// OAuth, Prometheus's default, signs in as an application: all three are needed.
	if method == "" || method == string(monitoringv1alpha1.AuthMethodTypeOAuth) {
		if deref(c.TenantID) == "" || deref(c.ClientID) == "" || c.ClientSecret == nil {
			return azureSDConfig{}, reject(ReasonInvalidConfig, "%s: the OAuth authentication method needs tenantID, clientID and clientSecret", field)
		}
	}
	out := azureSDConfig{
		Environment:          deref(c.Environment),
		AuthenticationMethod: method,
		SubscriptionID:       c.SubscriptionID,
		TenantID:             deref(c.TenantID),
		ClientID:             deref(c.ClientID),
		ResourceGroup:        deref(c.ResourceGroup),
	}
	var rej *rejection
	if out.ClientSecret, rej = s.secret(field+".clientSecret", c.ClientSecret); rej != nil {
		return azureSDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// gceSDConfig is one gce_sd_configs entry. GCE discovery signs in with the pod's Google
// credentials (workload identity, or GOOGLE_APPLICATION_CREDENTIALS naming a file of a Secret
// in spec.secrets), not with the config.
type gceSDConfig struct {
	Project      string   `yaml:"project"`
	Zone         string   `yaml:"zone"`
	Filter       string   `yaml:"filter,omitempty"`
	TagSeparator *string  `yaml:"tag_separator,omitempty"`
	Shared       sdShared `yaml:",inline"`
}

func (s *sdContext) gce(field string, c *monitoringv1alpha1.GCESDConfig) (gceSDConfig, *rejection) {
	if c.Project == "" || c.Zone == "" {
		return gceSDConfig{}, reject(ReasonInvalidConfig, "%s: project and zone are required", field)
	}
	out := gceSDConfig{Project: c.Project, Zone: c.Zone, Filter: deref(c.Filter), TagSeparator: c.TagSeparator}
	var rej *rejection
	out.Shared, rej = s.shared(field, c)
	return out, rej
}

// openstackSDConfig is one openstack_sd_configs entry. Of an HTTP client's settings, OpenStack
// discovery has the TLS config only (and the API nothing else).
type openstackSDConfig struct {
	Role                        string   `yaml:"role"`
	Region                      string   `yaml:"region"`
	IdentityEndpoint            string   `yaml:"identity_endpoint,omitempty"`
	Username                    string   `yaml:"username,omitempty"`
	UserID                      string   `yaml:"userid,omitempty"`
	Password                    string   `yaml:"password,omitempty"`
	DomainName                  string   `yaml:"domain_name,omitempty"`
	DomainID                    string   `yaml:"domain_id,omitempty"`
	ProjectName                 string   `yaml:"project_name,omitempty"`
	ProjectID                   string   `yaml:"project_id,omitempty"`
	ApplicationCredentialName   string   `yaml:"application_credential_name,omitempty"`
	ApplicationCredentialID     string   `yaml:"application_credential_id,omitempty"`
	ApplicationCredentialSecret string   `yaml:"application_credential_secret,omitempty"`
	AllTenants                  *bool    `yaml:"all_tenants,omitempty"`
	Availability                string   `yaml:"availability,omitempty"`
	Shared                      sdShared `yaml:",inline"`
}

// openstack renders one OpenStack discovery config. The LoadBalancer role needs v3.2, as with
// the existing operator. The role and availability are written in lower case, the only
// spelling Prometheus takes (the existing operator writes the API's Public, Admin or Internal
// as given, which Prometheus refuses).
func (s *sdContext) openstack(field string, c *monitoringv1alpha1.OpenStackSDConfig) (openstackSDConfig, *rejection) {
	if c.Region == "" {
		return openstackSDConfig{}, reject(ReasonInvalidConfig, "%s.region: the region is required", field)
	}
	if rej := s.need(field+".role: LoadBalancer", sdVersion{3, 2, 0}, c.Role == monitoringv1alpha1.OpenStackRoleLoadBalancer); rej != nil {
		return openstackSDConfig{}, rej
	}
	out := openstackSDConfig{
		Role:                      strings.ToLower(string(c.Role)),
		Region:                    c.Region,
		IdentityEndpoint:          deref(c.IdentityEndpoint),
		Username:                  deref(c.Username),
		UserID:                    deref(c.UserID),
		DomainName:                deref(c.DomainName),
		DomainID:                  deref(c.DomainID),
		ProjectName:               deref(c.ProjectName),
		ProjectID:                 deref(c.ProjectID),
		ApplicationCredentialName: deref(c.ApplicationCredentialName),
		ApplicationCredentialID:   deref(c.ApplicationCredentialID),
		AllTenants:                c.AllTenants,
		Availability:              strings.ToLower(deref(c.Availability)),
	}
	var rej *rejection
	if out.Password, rej = s.secret(field+".password", c.Password); rej != nil {
		return openstackSDConfig{}, rej
	}
	if out.ApplicationCredentialSecret, rej = s.secret(field+".applicationCredentialSecret", c.ApplicationCredentialSecret); rej != nil {
		return openstackSDConfig{}, rej
	}
	out.Shared, rej = s.shared(field, c)
	return out, rej
}
