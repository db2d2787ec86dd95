package catalog

import "github.com/pristinedb/pristine/api"

// API is the template's description on the wire (and in the CLI's JSON):
// its build account's password never goes out.
func (m *Meta) API() *api.Template {
	return &api.Template{Name: m.Name, Hash: m.Hash, Key: m.Key, Created: m.Created, LastUsed: m.LastUsed,
		Server: m.Server, Flavor: m.Flavor, Backend: m.Backend, LogFileSize: m.LogFileSize,
		ServerOptions: m.ServerOptions, Databases: m.Databases, User: m.User, Password: api.Hidden(m.Password),
		Accounts: m.Accounts, Bytes: m.Bytes, BuildSeconds: m.BuildSeconds, Inputs: m.Inputs,
		Warnings: m.Warnings, InitCmd: m.InitCmd, Parent: m.Parent, ParentName: m.ParentName}
}

// APIList is API of each; nil stays nil (JSON null), as before the wire
// types had their own package.
func APIList(all []*Meta) []*api.Template {
	if all == nil {
		return nil
	}
	out := make([]*api.Template, 0, len(all))
	for _, m := range all {
		out = append(out, m.API())
	}
	return out
}
