// SimGrid 3.32 XML of a platform model, written with TinyXML2. Fixed element order and number
// formatting (shortest round-trip text), so the same model always gives the same bytes.
#include "gridcast/platform/generator.hpp"
#include "gridcast/foundation/units.hpp"

#include <tinyxml2.h>

namespace gridcast::platform {

namespace {

const char* sharing_name(Sharing s)
{
  switch (s) {
    case Sharing::Shared:
      return "SHARED";
    case Sharing::SplitDuplex:
      return "SPLITDUPLEX";
    case Sharing::Fatpipe:
      return "FATPIPE";
  }
  return "SHARED";
}

void add_links(tinyxml2::XMLDocument& doc, tinyxml2::XMLElement* route, const PlatformModel& m,
               const std::vector<LinkUse>& links)
{
  for (const LinkUse& u : links) {
    tinyxml2::XMLElement* ctn = doc.NewElement("link_ctn");
    ctn->SetAttribute("id", m.links.at(u.link).name.c_str());
    if (u.direction != Direction::None)
      ctn->SetAttribute("direction", u.direction == Direction::Up ? "UP" : "DOWN");
    route->InsertEndChild(ctn);
  }
}

}  // namespace

std::string render_xml(const PlatformModel& m)
{
  tinyxml2::XMLDocument doc;
  doc.InsertEndChild(doc.NewDeclaration("xml version='1.0'"));
  doc.InsertEndChild(doc.NewUnknown("DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\""));
  for (const std::string& c : m.comments)
    doc.InsertEndChild(doc.NewComment(c.c_str()));
  tinyxml2::XMLElement* platform = doc.NewElement("platform");
  platform->SetAttribute("version", "4.1");
  doc.InsertEndChild(platform);

  // One zone, Dijkstra with a route cache: each source's shortest-path tree is computed once.
  tinyxml2::XMLElement* zone = doc.NewElement("zone");
  zone->SetAttribute("id", m.zone_id.c_str());
  zone->SetAttribute("routing", "DijkstraCache");
  platform->InsertEndChild(zone);
  auto prop = [&](tinyxml2::XMLElement* parent, const Property& p) {
    tinyxml2::XMLElement* e = doc.NewElement("prop");
    e->SetAttribute("id", p.name.c_str());
    e->SetAttribute("value", p.value.c_str());
    parent->InsertEndChild(e);
  };
  for (const Property& p : m.zone_properties)
    prop(zone, p);

  for (const HostDef& h : m.hosts) {
    tinyxml2::XMLElement* e = doc.NewElement("host");
    e->SetAttribute("id", h.name.c_str());
    e->SetAttribute("speed", (format_number(h.speed_flops) + "f").c_str());
    if (h.cores != 1)
      e->SetAttribute("core", h.cores);
    for (const Property& p : h.properties)
      prop(e, p);
    zone->InsertEndChild(e);
  }
  for (const std::string& r : m.routers) {
    tinyxml2::XMLElement* e = doc.NewElement("router");
    e->SetAttribute("id", r.c_str());
    zone->InsertEndChild(e);
  }
  for (const LinkDef& l : m.links) {
    tinyxml2::XMLElement* e = doc.NewElement("link");
    e->SetAttribute("id", l.name.c_str());
    e->SetAttribute("bandwidth", (format_number(l.bandwidth_Bps) + "Bps").c_str());
    e->SetAttribute("latency", (format_number(l.latency_s) + "s").c_str());
    if (l.sharing != Sharing::Shared)
      e->SetAttribute("sharing_policy", sharing_name(l.sharing));
    zone->InsertEndChild(e);
  }
  for (const RouteDef& r : m.routes) {
    tinyxml2::XMLElement* e = doc.NewElement("route");
    e->SetAttribute("src", r.src.c_str());
    e->SetAttribute("dst", r.dst.c_str());
    e->SetAttribute("symmetrical", r.symmetrical ? "YES" : "NO");
    add_links(doc, e, m, r.links);
    zone->InsertEndChild(e);
  }
  for (const RouteDef& r : m.bypass_routes) {
    tinyxml2::XMLElement* e = doc.NewElement("bypassRoute");
    e->SetAttribute("src", r.src.c_str());
    e->SetAttribute("dst", r.dst.c_str());
    add_links(doc, e, m, r.links);
    zone->InsertEndChild(e);
  }
  tinyxml2::XMLPrinter printer;
  doc.Print(&printer);
  return std::string(printer.CStr(), static_cast<std::size_t>(printer.CStrSize() - 1));
}

}  // namespace gridcast::platform
